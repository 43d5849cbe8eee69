/* core/sched_match.c - verifier, part two: number every send and receive
 * on its connection (src, dst, channel), match the k-th send with the k-th
 * receive, check their counts, and build the dependents graph (explicit
 * dependencies plus per-connection start order) the executor walks. */
#include <stdlib.h>
#include <string.h>

#include "core/sched_verify.h"

typedef struct mkey {
    int32_t src, dst;
    uint32_t ch, seq;
    uint32_t g;
} mkey_t;

static int mkey_cmp(const void *pa, const void *pb)
{
    const mkey_t *a = pa, *b = pb;
    if (a->src != b->src)
        return a->src < b->src ? -1 : 1;
    if (a->dst != b->dst)
        return a->dst < b->dst ? -1 : 1;
    if (a->ch != b->ch)
        return a->ch < b->ch ? -1 : 1;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return 0;
}

/* Number sends/receives per connection and link each step to the previous
 * one on its connection. cnt/last are p*C*2 scratch arrays, reset after
 * each rank by walking its steps again. */
static void number_rank(core_verify_t *v, int r, uint32_t *cnt, uint32_t *last,
                        mkey_t *snd, uint64_t *ns, mkey_t *rcv, uint64_t *nr)
{
    const core_sched_t *s = &v->sch[r];
    uint32_t C = (uint32_t)v->d->channels;
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t i = 0; i < s->nsteps; i++) {
            const core_step_t *st = &s->steps[i];
            uint32_t g = (uint32_t)(v->base[r] + i);
            if (st->kind == CORE_STEP_COPY)
                continue;
            int is_send = st->kind == CORE_STEP_SEND;
            uint64_t slot =
                ((uint64_t)st->peer * C + st->channel) * 2 + (uint64_t)is_send;
            if (pass == 1) {
                cnt[slot] = 0;
                last[slot] = CORE_VERIFY_NONE;
                continue;
            }
            v->prev[g] = last[slot];
            last[slot] = g;
            mkey_t k = {is_send ? r : st->peer, is_send ? st->peer : r,
                        st->channel, cnt[slot]++, g};
            if (is_send)
                snd[(*ns)++] = k;
            else
                rcv[(*nr)++] = k;
        }
}

static herd_status_t pair_up(core_verify_t *v, mkey_t *snd, uint64_t ns,
                             mkey_t *rcv, uint64_t nr)
{
    char a[128], b[128];
    qsort(snd, ns, sizeof(*snd), mkey_cmp);
    qsort(rcv, nr, sizeof(*rcv), mkey_cmp);
    uint64_t i = 0, j = 0;
    while (i < ns || j < nr) {
        int c = i == ns ? 1 : j == nr ? -1 : mkey_cmp(&snd[i], &rcv[j]);
        if (c < 0) {
            core_verify_fail(v,
                             "%s (message %u on its connection) has no "
                             "matching receive",
                             core_verify_step_str(v, snd[i].g, a, sizeof(a)),
                             snd[i].seq);
            return HERD_ERR_MISMATCH;
        }
        if (c > 0) {
            core_verify_fail(v,
                             "%s (message %u on its connection) has no "
                             "matching send",
                             core_verify_step_str(v, rcv[j].g, a, sizeof(a)),
                             rcv[j].seq);
            return HERD_ERR_MISMATCH;
        }
        uint32_t gs = snd[i++].g, gr = rcv[j++].g;
        if (core_verify_step(v, gs)->count != core_verify_step(v, gr)->count) {
            core_verify_fail(v, "%s is matched by %s: counts differ",
                             core_verify_step_str(v, gs, a, sizeof(a)),
                             core_verify_step_str(v, gr, b, sizeof(b)));
            return HERD_ERR_MISMATCH;
        }
        v->match[gs] = gr;
        v->match[gr] = gs;
    }
    return HERD_OK;
}

static herd_status_t build_graph(core_verify_t *v)
{
    v->out_off = calloc((size_t)v->n + 1, sizeof(*v->out_off));
    if (!v->out_off)
        return HERD_ERR_NO_MEMORY;
    uint64_t ne = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t g = 0; g < v->n; g++) {
            const core_step_t *st = core_verify_step(v, g);
            const uint32_t *deps = v->sch[v->rank_of[g]].deps + st->dep_off;
            uint32_t base = (uint32_t)v->base[v->rank_of[g]];
            for (uint32_t k = 0; k <= st->ndeps; k++) {
                uint32_t from = k < st->ndeps ? base + deps[k] : v->prev[g];
                if (from == CORE_VERIFY_NONE)
                    continue;
                if (pass == 0)
                    v->out_off[from + 1]++;
                else
                    v->out_idx[v->out_off[from]++] = g;
            }
        }
        if (pass == 0) {
            for (uint32_t g = 0; g < v->n; g++)
                v->out_off[g + 1] += v->out_off[g];
            ne = v->out_off[v->n];
            v->out_idx = malloc((ne ? ne : 1) * sizeof(*v->out_idx));
            if (!v->out_idx)
                return HERD_ERR_NO_MEMORY;
        }
    }
    /* pass 1 advanced each start to the next one's: shift back */
    for (uint32_t g = v->n; g > 0; g--)
        v->out_off[g] = v->out_off[g - 1];
    v->out_off[0] = 0;
    return HERD_OK;
}

herd_status_t core_verify_match(core_verify_t *v)
{
    uint64_t slots = (uint64_t)v->p * (uint64_t)v->d->channels * 2;
    if (slots > (1u << 26)) {
        core_verify_fail(v, "group x channels too large to verify");
        return HERD_ERR_INVALID_ARG;
    }
    size_t n = v->n ? v->n : 1;
    v->match = malloc(n * sizeof(*v->match));
    v->prev = malloc(n * sizeof(*v->prev));
    v->payload = calloc(n, sizeof(*v->payload));
    uint32_t *cnt = calloc(slots, sizeof(*cnt));
    uint32_t *last = malloc(slots * sizeof(*last));
    mkey_t *snd = malloc(n * sizeof(*snd)), *rcv = malloc(n * sizeof(*rcv));
    herd_status_t st = HERD_ERR_NO_MEMORY;
    if (!v->match || !v->prev || !v->payload || !cnt || !last || !snd || !rcv)
        goto out;
    memset(v->match, 0xff, n * sizeof(*v->match));
    memset(v->prev, 0xff, n * sizeof(*v->prev));
    memset(last, 0xff, slots * sizeof(*last));
    uint64_t ns = 0, nr = 0;
    for (int r = 0; r < v->p; r++)
        number_rank(v, r, cnt, last, snd, &ns, rcv, &nr);
    st = pair_up(v, snd, ns, rcv, nr);
    if (st != HERD_OK)
        goto out;
    for (uint32_t g = 0; g < v->n; g++)
        if (core_verify_step(v, g)->kind == CORE_STEP_SEND) {
            v->payload[g] = v->pool_n;
            v->pool_n += core_verify_step(v, g)->count;
        }
    st = build_graph(v);
out:
    free(cnt);
    free(last);
    free(snd);
    free(rcv);
    return st;
}

void core_verify_match_free(core_verify_t *v)
{
    free(v->match);
    free(v->prev);
    free(v->payload);
    free(v->out_off);
    free(v->out_idx);
}
