/* core/sched_print.c - a readable dump of one rank's schedule, one line
 * per step: index, kind, peer and channel, element ranges, dependencies.
 * Used by `herd schedule` and by failing tests. */
#include <inttypes.h>

#include "core/sched.h"

const char *core_step_kind_name(int k)
{
    static const char *const names[] = {"send", "recv", "recv_reduce", "copy"};
    return k >= 0 && k <= CORE_STEP_COPY ? names[k] : "?";
}

static const char *buf_name(int b)
{
    static const char *const names[] = {"in", "out", "scratch", "-"};
    return b >= 0 && b <= CORE_BUF_NONE ? names[b] : "?";
}

static void print_range(FILE *f, int buf, uint64_t off, uint64_t count,
                        int width)
{
    char tmp[64] = "-";
    if (buf != CORE_BUF_NONE)
        snprintf(tmp, sizeof(tmp), "%s[%" PRIu64 "..%" PRIu64 ")",
                 buf_name(buf), off, off + count);
    fprintf(f, "%-*s", width, tmp);
}

void core_sched_print(const core_sched_t *s, FILE *f)
{
    const core_sched_desc_t *d = &s->desc;
    fprintf(f,
            "# rank %d/%d %s %s count=%" PRIu64 " channels=%d steps=%u "
            "scratch=%" PRIu64 "\n",
            d->rank, d->nranks, herd_algo_name(d->algo),
            herd_coll_name(d->coll), d->count, d->channels, s->nsteps,
            s->scratch_count);
    for (uint32_t i = 0; i < s->nsteps; i++) {
        const core_step_t *st = &s->steps[i];
        fprintf(f, "%5u %-11s ", i, core_step_kind_name(st->kind));
        if (st->kind == CORE_STEP_COPY)
            fprintf(f, "%-8s", "local");
        else
            fprintf(f, "%s %-5d", st->kind == CORE_STEP_SEND ? "to  " : "from",
                    st->peer);
        fprintf(f, " ch%-2u n=%-8" PRIu64 " ", st->channel, st->count);
        int has_src = st->kind != CORE_STEP_RECV;
        int has_dst = st->kind != CORE_STEP_SEND;
        print_range(f, has_src ? st->src_buf : CORE_BUF_NONE, st->src_off,
                    st->count, 22);
        fprintf(f, " -> ");
        print_range(f, has_dst ? st->dst_buf : CORE_BUF_NONE, st->dst_off,
                    st->count, st->ndeps ? 22 : 0);
        if (st->ndeps) {
            fprintf(f, " after");
            for (uint32_t k = 0; k < st->ndeps; k++)
                fprintf(f, " %u", s->deps[st->dep_off + k]);
        }
        fprintf(f, "\n");
    }
}
