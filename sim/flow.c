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

static void delivered(sim_world_t *w, sim_flow_t *f)
{
    sim_inst_t *inst = f->inst;
    int dst = f->dst, src = f->src;
    if (sim_sym_on(inst)) /* the representative of dst receives it */
        sim_sym_map(w, &dst, &src);
    sim_exec_t *x = inst->execs[dst];
    if (x) {
        sim_exec_deliver(w, x, f->rconn, src, f->channel, f->k, f->payload);
    } else if (!(sim_inst_member_state(inst, dst) & 6)) {
        /* not posted, or posted this instant and started at its end
         * (sim/sym.c): kept for when it starts; done (2) or mismatched
         * (4): dropped */
        sim_early_t *e = malloc(sizeof(*e));
        if (e) {
            /* Order does not matter: messages are matched by index. */
            *e = (sim_early_t){.src = src,
                               .channel = f->channel,
                               .k = f->k,
                               .payload = f->payload,
                               .next = inst->early[dst]};
            inst->early[dst] = e;
        } else {
            free(f->payload);
        }
    } else {
        free(f->payload); /* a mismatched member: dropped */
    }
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
    if (x) {
        sim_exec_rtr(w, x, f->src, f->channel);
    } else if (!(sim_inst_member_state(inst, f->dst) & 6)) {
        sim_early_t *e = malloc(sizeof(*e));
        if (e) {
            *e = (sim_early_t){.src = f->src,
                               .channel = f->channel,
                               .k = SIM_EARLY_RTR,
                               .next = inst->early[f->dst]};
            inst->early[f->dst] = e;
        } else if (w->end_status == HERD_OK) {
            w->end_status = HERD_ERR_NO_MEMORY;
        }
    }
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
    w->events++;
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
