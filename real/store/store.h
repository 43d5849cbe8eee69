/* real/store/store.h - the rendezvous key-value store (server and client)
 * that bootstraps the real engines, as torch's TCPStore does.
 *
 * The server runs a libevent loop in its own thread; many clients at
 * once; a binary protocol with length prefixes; an optional shared token
 * that a client must present before anything else (the client always
 * presents one, empty without a token, so a refusal shows at connect).
 * The client is blocking, one request at a time, each with a timeout. */
#ifndef HERD_REAL_STORE_H
#define HERD_REAL_STORE_H

#include <stddef.h>
#include <stdint.h>

#include <herd/herd.h>

typedef struct store_server store_server_t;
typedef struct store_client store_client_t;

/* What the server lets clients hold (store_limits_default gives the
 * defaults in parentheses). Beyond them a connection is closed with a
 * logged reason; the others are served on. */
typedef struct store_limits {
    size_t max_buffered;   /* unprocessed input over all clients (512 MiB) */
    int max_conns;         /* open connections (8192) */
    double auth_s;         /* a token server: authenticate within (5 s) */
    double stall_s;        /* a begun frame must be complete within
                              stall_s + its size / min_rate (10 s) */
    double min_rate;       /* bytes per second (256 KiB/s) */
    double accept_pause_s; /* accept failed (EMFILE): listener off (0.1 s) */
    double log_every_s;    /* repeated messages at most this often (10 s) */
} store_limits_t;

void store_limits_default(store_limits_t *lim);

/* Listen on host:port (port 0: an ephemeral port; host NULL: 0.0.0.0).
 * token NULL or "": no authentication. lim NULL: the defaults. */
herd_status_t store_server_start(const char *host, int port, const char *token,
                                 store_server_t **out);
herd_status_t store_server_start_limits(const char *host, int port,
                                        const char *token,
                                        const store_limits_t *lim,
                                        store_server_t **out);
int store_server_port(const store_server_t *srv);
void store_server_stop(store_server_t *srv);

/* Connect, retrying until timeout_s (the server may start later). */
herd_status_t store_client_connect(const char *host, int port,
                                   const char *token, double timeout_s,
                                   store_client_t **out);
void store_client_close(store_client_t *c);
/* Timeout used by get/wait when their own timeout is <= 0. */
void store_client_set_timeout(store_client_t *c, double timeout_s);

herd_status_t store_set(store_client_t *c, const char *key, const void *val,
                        size_t len);
/* Waits until the key exists. *val_out is malloc'd (caller frees) and
 * NUL-terminated past *len_out for convenience. */
herd_status_t store_get(store_client_t *c, const char *key, double timeout_s,
                        void **val_out, size_t *len_out);
/* Missing keys count as 0; the value is kept as decimal text. */
herd_status_t store_add(store_client_t *c, const char *key, int64_t delta,
                        int64_t *value_out);
/* torch's compare_set semantics; *cur_out (malloc'd) is the value after. */
herd_status_t store_compare_set(store_client_t *c, const char *key,
                                const void *expected, size_t elen,
                                const void *desired, size_t dlen,
                                void **cur_out, size_t *curlen_out);
herd_status_t store_wait(store_client_t *c, const char *const *keys, int n,
                         double timeout_s);
herd_status_t store_check(store_client_t *c, const char *const *keys, int n,
                          int *all_exist_out);
herd_status_t store_delete(store_client_t *c, const char *key,
                           int *deleted_out);
herd_status_t store_num_keys(store_client_t *c, int64_t *n_out);

/* A client that speaks PyTorch's TCPStore protocol to the store at
 * host:port: torchrun's agent store, a torch TCPStore master (torch 1.x
 * or >= 2), or herd's server. Same calls; keys get torch's "/" in front
 * (after the client's prefix is applied), so torch and herd processes
 * share keys. No token (TCPStore has none). Which protocol the server
 * speaks is found out (a probe no server is harmed by; up to 1 s of
 * silence from torch >= 2's libuv server); _version says it instead:
 * 1 torch 1.x (a wait that times out leaves the connection unusable,
 * as torch 1.x's own client), 2 torch >= 2, 0 find out. */
herd_status_t store_client_connect_tcpstore(const char *host, int port,
                                            double timeout_s,
                                            store_client_t **out);
herd_status_t store_client_connect_tcpstore_version(const char *host, int port,
                                                    int version,
                                                    double timeout_s,
                                                    store_client_t **out);

/* A client of the file store at `path` (created if missing): same calls,
 * for processes on one host; get/wait poll the file with short sleeps. */
herd_status_t store_client_open_file(const char *path, store_client_t **out);
/* Prepend `prefix` (NULL or "": none) to every key this client uses
 * (num_keys still counts all keys). store_rdzv_open sets it from
 * HERD_STORE_PREFIX, which `herd launch` exports as <run_id>/<restart>/. */
herd_status_t store_client_set_prefix(store_client_t *c, const char *prefix);

/* Rendezvous for a real engine from herd_init_t: resolves rank, world
 * size and local rank (explicit fields, then env:// with RANK/WORLD_SIZE/
 * LOCAL_RANK/MASTER_ADDR/MASTER_PORT, Slurm's SLURM_PROCID/SLURM_NTASKS/
 * SLURM_LOCALID, Open MPI's OMPI_COMM_WORLD_*), tcp://host:port or
 * file:///path, and connects to the store (rank 0 starts the server for
 * tcp:// and env:// unless HERD_STORE_EXTERNAL=1). */
typedef struct store_rdzv {
    int rank, world_size, local_rank, local_world_size;
    store_client_t *client;
    store_server_t *server; /* non-NULL on the rank that hosts it */
} store_rdzv_t;

herd_status_t store_rdzv_open(const herd_init_t *init, store_rdzv_t *out,
                              char *err, size_t errlen);
void store_rdzv_close(store_rdzv_t *r);

#endif
