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

/* The client's default timeout (seconds). */
double store_client_timeout(const store_client_t *c);

#endif
