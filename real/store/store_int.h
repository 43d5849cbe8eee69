/* real/store/store_int.h - what the store's client front end shares with
 * its two back ends: the TCP protocol client (client.c) and the file
 * store (file.c). Keys here are full keys (the client's prefix applied). */
#ifndef HERD_REAL_STORE_INT_H
#define HERD_REAL_STORE_INT_H

#include <stddef.h>
#include <stdint.h>

#include <herd/status.h>

#include "real/store/store.h"

typedef struct store_file store_file_t;

herd_status_t store_file_open(const char *path, store_file_t **out);
void store_file_close(store_file_t *f);
herd_status_t store_file_set(store_file_t *f, const char *key, const void *val,
                             size_t len);
herd_status_t store_file_get(store_file_t *f, const char *key, double timeout_s,
                             void **val_out, size_t *len_out);
herd_status_t store_file_add(store_file_t *f, const char *key, int64_t delta,
                             int64_t *value_out);
herd_status_t store_file_cas(store_file_t *f, const char *key, const void *exp,
                             size_t elen, const void *des, size_t dlen,
                             void **cur_out, size_t *curlen_out);
herd_status_t store_file_wait(store_file_t *f, const char *const *keys, int n,
                              double timeout_s);
herd_status_t store_file_check(store_file_t *f, const char *const *keys, int n,
                               int *all_out);
herd_status_t store_file_delete(store_file_t *f, const char *key,
                                int *deleted_out);
herd_status_t store_file_num_keys(store_file_t *f, int64_t *n_out);

/* client_tcps.c: the TCPStore back end (keys get torch's "/"). open
 * takes the connected fd (closed on failure). */
typedef struct store_tcps store_tcps_t;

/* What store_tcps_probe found on a fresh connection: torch 1.x's server
 * (reconnect, version 1), herd's (the connection is ready: version 0),
 * torch >= 2's (reconnect, version 2), or something else. */
enum {
    TCPS_PROBE_V1 = 1,
    TCPS_PROBE_V2 = 2,
    TCPS_PROBE_HERD = 3,
    TCPS_PROBE_NONE = 4
};
int store_tcps_probe(int fd, double timeout_s);
/* version 1: torch 1.x's numbering, no hello; 2: torch >= 2's, hello
 * and ping; 0: >= 2's numbering on a connection the probe upgraded. */
herd_status_t store_tcps_open(int fd, double timeout_s, int version,
                              store_tcps_t **out);
void store_tcps_close(store_tcps_t *t);
herd_status_t store_tcps_set(store_tcps_t *t, const char *key, const void *val,
                             size_t len);
herd_status_t store_tcps_get(store_tcps_t *t, const char *key, double timeout_s,
                             void **val_out, size_t *len_out);
herd_status_t store_tcps_add(store_tcps_t *t, const char *key, int64_t delta,
                             int64_t *value_out);
herd_status_t store_tcps_cas(store_tcps_t *t, const char *key, const void *exp,
                             size_t elen, const void *des, size_t dlen,
                             void **cur_out, size_t *curlen_out);
herd_status_t store_tcps_wait(store_tcps_t *t, const char *const *keys, int n,
                              double timeout_s);
herd_status_t store_tcps_check(store_tcps_t *t, const char *const *keys, int n,
                               int *all_out);
herd_status_t store_tcps_delete(store_tcps_t *t, const char *key,
                                int *deleted_out);
herd_status_t store_tcps_num_keys(store_tcps_t *t, int64_t *n_out);

/* client.c's socket I/O, bounded by a CLOCK_MONOTONIC deadline. */
double store_now_s(void);
herd_status_t store_io_send(int fd, const void *buf, size_t n, double deadline);
herd_status_t store_io_recv(int fd, void *buf, size_t n, double deadline);

/* The client's default timeout (seconds). */
double store_client_timeout(const store_client_t *c);

#endif
