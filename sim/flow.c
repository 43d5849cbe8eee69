/* sim/flow.c - flow contexts handed to the network model (a slab-backed
 * free list, since a large run starts millions of flows) and the network
 * callback that turns "sent" and "delivered" into step completions. */
#include <stdlib.h>

#include "sim/sim.h"
#include "sim/sym.h"

#define SIM_FLOW_SLAB 4096

sim_flow_t *sim_flow_get(sim_world_t *w)
{
    if (!w->flow_free) {
        void **slabs = realloc(w->flow_slabs, (w->nslabs + 1) * sizeof(void *));
        if (!slabs)
            return NULL;
        w->flow_slabs = slabs;
        sim_flow_t *s = calloc(SIM_FLOW_SLAB, sizeof(*s));
        if (!s)
            return NULL;
        w->flow_slabs[w->nslabs++] = s;
        for (size_t i = 0; i < SIM_FLOW_SLAB; i++)
            sim_flow_put(w, &s[i]);
    }
    sim_flow_t *f = w->flow_free;
    w->flow_free = f->next_free;
    f->next_free = NULL;
    return f;
}

void sim_flow_put(sim_world_t *w, sim_flow_t *f)
{
    /* what a collective's flow reads without setting it first */
    f->payload = NULL;
    f->sx = NULL;
    f->send = f->recv = NULL;
    f->next_free = w->flow_free;
    w->flow_free = f;
}

/* Payloads of flows still in flight at the end are freed here. */
void sim_flow_fini(sim_world_t *w)
{
    for (size_t i = 0; i < w->nslabs; i++) {
        sim_flow_t *s = w->flow_slabs[i];
        for (size_t j = 0; j < SIM_FLOW_SLAB; j++)
            free(s[j].payload); /* NULL unless still in flight */
        free(s);
    }
    free(w->flow_slabs);
    w->flow_slabs = NULL;
    w->nslabs = 0;
    w->flow_free = NULL;
}

/* A message (or, k == SIM_EARLY_RTR, a gloo notice) for member `dst`
 * that has no executor yet: kept for when it starts if it has not posted
 * or posted this instant and started at its end (sim/sym.c): 1. For a
 * member done (2) or mismatched (4) 0, and -1 when memory runs out: the
 * caller drops it. Order does not matter: messages are matched by index. */
static int keep_early(sim_inst_t *inst, int dst, int src, int channel,
                      uint32_t k, void *payload)
{
    if (sim_inst_member_state(inst, dst) & 6)
        return 0;
    sim_early_t *e = malloc(sizeof(*e));
    if (!e)
        return -1;
    *e = (sim_early_t){.src = src,
                       .channel = channel,
                       .k = k,
                       .payload = payload,
                       .next = inst->early[dst]};
    inst->early[dst] = e;
    return 1;
}

static void delivered(sim_world_t *w, sim_flow_t *f)
{
    sim_inst_t *inst = f->inst;
    int dst = f->dst, src = f->src;
    if (sim_sym_on(inst)) /* the representative of dst receives it */
        sim_sym_map(w, &dst, &src);
    sim_exec_t *x = inst->execs[dst];
    if (x)
        sim_exec_deliver(w, x, f->rconn, src, f->channel, f->k, f->payload);
    else if (keep_early(inst, dst, src, f->channel, f->k, f->payload) <= 0)
        free(f->payload);
    f->payload = NULL;
    f->inst = NULL;
    inst->inflight--;
    sim_flow_put(w, f);
    sim_inst_maybe_free(w, inst);
}

/* Algorithm "gloo": a receiver's ready-to-receive notice arrived at the
 * sender; kept (as an early event) when the sender has not posted yet. */
static void rtr_delivered(sim_world_t *w, sim_flow_t *f)
{
    sim_inst_t *inst = f->inst;
    sim_exec_t *x = inst->execs[f->dst];
    if (x)
        sim_exec_rtr(w, x, f->src, f->channel);
    else if (keep_early(inst, f->dst, f->src, f->channel, SIM_EARLY_RTR, NULL) <
                 0 &&
             w->end_status == HERD_OK)
        w->end_status = HERD_ERR_NO_MEMORY; /* a lost notice would hang */
    f->inst = NULL;
    inst->inflight--;
    sim_flow_put(w, f);
    sim_inst_maybe_free(w, inst);
}

void sim_net_cb(void *ctx, uint64_t t, int is_delivered, void *arg)
{
    sim_world_t *w = arg;
    sim_flow_t *f = ctx;
    w->now = t;
    if (sim_event(w))
        return; /* past the memory budget: nothing more starts */
    if (f->is_p2p == SIM_FLOW_RTR) {
        if (is_delivered)
            rtr_delivered(w, f);
        return;
    }
    if (f->is_p2p) {
        sim_p2p_flow_done(w, f, is_delivered);
        return;
    }
    if (!is_delivered) {
        sim_exec_t *x = f->sx;
        f->sx = NULL;
        sim_exec_step_done(w, x, f->step);
        return;
    }
    delivered(w, f);
}
