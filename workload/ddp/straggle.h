/* workload/ddp/straggle.h - stragglers on one gradient: a delay where one
 * parameter's gradient is produced on one rank (a scenario's
 * `stragglers.grads`), resolved against the model and laid out per rank
 * for the walkers (DDP's and FSDP's).
 *
 * Two kinds, as docs/ddp.md explains: `affects: backward` (the default) is
 * a slow layer: the autograd thread spends `delay` more before this
 * gradient is ready, so it and every later gradient of that rank's
 * backward move (a slow kernel, or a time.sleep in a parameter's
 * register_hook, which blocks the autograd thread). `affects: grad` moves
 * only this gradient's ready instant (its reducer hook runs late) while
 * backward's compute goes on. */
#ifndef HERD_WORKLOAD_DDP_STRAGGLE_H
#define HERD_WORKLOAD_DDP_STRAGGLE_H

#include <stddef.h>

#include <herd/herd.h>

#include "workload/ddp/model.h"

#define DDP_GRAD_DELAY_MAX 64
#define DDP_GRAD_NAME_MAX 256

typedef struct ddp_grad_delay {
    int rank;
    char param[DDP_GRAD_NAME_MAX]; /* name in the model file, or index */
    double delay_s;
    int only_grad; /* affects: grad */
} ddp_grad_delay_t;

typedef struct ddp_grad_delays {
    ddp_grad_delay_t d[DDP_GRAD_DELAY_MAX];
    size_t n;
} ddp_grad_delays_t;

/* One rank's delays by parameter index (nparams entries each); both
 * arrays NULL when the rank has none. */
typedef struct ddp_rank_delays {
    double *layer; /* affects: backward: compute before the gradient */
    double *grad;  /* affects: grad: the ready instant moves */
} ddp_rank_delays_t;

/* Add one delay (from a scenario). Fails past DDP_GRAD_DELAY_MAX or when
 * the name is too long, with a message. */
herd_status_t ddp_grad_delays_add(ddp_grad_delays_t *l, int rank,
                                  const char *param, double delay_s,
                                  int only_grad, char *err, size_t errlen);

/* The parameter index `param` names in m: its name, or a whole number
 * below nparams. On failure writes "stragglers.grads[i].param: no
 * parameter 'x' in model 'm' (N parameters); close names: a, b" (or, with
 * none close, the first names) and returns HERD_ERR_INVALID_ARG. */
herd_status_t ddp_grad_delay_index(const ddp_model_t *m, const char *param,
                                   size_t item, size_t *out, char *err,
                                   size_t errlen);

/* Check every delay against the model and the world size. */
herd_status_t ddp_grad_delays_check(const ddp_grad_delays_t *l,
                                    const ddp_model_t *m, int world, char *err,
                                    size_t errlen);

/* Rank's delays per parameter (delays of one parameter add up). On
 * success out's arrays are malloc'd (or NULL when the rank has none);
 * release with ddp_rank_delays_fini. */
herd_status_t ddp_rank_delays_make(const ddp_grad_delays_t *l,
                                   const ddp_model_t *m, int rank,
                                   ddp_rank_delays_t *out);
void ddp_rank_delays_fini(ddp_rank_delays_t *rd);

#endif
