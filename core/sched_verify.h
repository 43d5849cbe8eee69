/* core/sched_verify.h - internal state of the schedule verifier, shared
 * by core/sched_verify.c (lowering, static checks), core/sched_match.c
 * (send/receive matching, dependency graph) and core/sched_exec.c
 * (symbolic execution under several orders, output checks). Steps of all
 * ranks are numbered globally: rank r's step i is base[r] + i. */
#ifndef HERD_CORE_SCHED_VERIFY_H
#define HERD_CORE_SCHED_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "core/sched.h"

typedef struct core_verify {
    const core_sched_desc_t *d;
    int p;
    char *why;
    size_t whylen;
    int failed;
    core_sched_t *sch; /* p schedules */
    uint64_t *base;    /* p + 1 */
    uint32_t n;        /* steps in all */
    int32_t *rank_of;  /* n */
    /* from core_verify_match */
    uint32_t *match;   /* n: the matching send/recv, UINT32_MAX if none */
    uint32_t *prev;    /* n: previous step on the connection, or none */
    uint64_t *payload; /* n: pool offset of a send's message */
    uint64_t pool_n;
    uint32_t *out_off; /* n + 1: dependents (deps and connection order) */
    uint32_t *out_idx;
} core_verify_t;

#define CORE_VERIFY_NONE UINT32_MAX

void core_verify_fail(core_verify_t *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
const char *core_verify_step_str(const core_verify_t *v, uint32_t g, char *buf,
                                 size_t len);
/* Elements of buffer `buf` (IN or OUT) rank `rank` holds. */
uint64_t core_verify_bufsize(const core_sched_desc_t *d, int rank, int buf);
/* Sum of n counts at v[0], v[stride], ... */
uint64_t core_verify_vsum(const size_t *v, int n, int stride);

static inline const core_step_t *core_verify_step(const core_verify_t *v,
                                                  uint32_t g)
{
    int r = v->rank_of[g];
    return &v->sch[r].steps[g - v->base[r]];
}

herd_status_t core_verify_match(core_verify_t *v);
void core_verify_match_free(core_verify_t *v);
herd_status_t core_verify_exec_all(core_verify_t *v);

#endif
