/* sim/sym.h - the symmetry shortcut: a collective whose members are
 * interchangeable up to a shift by one node (gpus_per_node ranks) is
 * simulated for one node's members only, the representatives, and every
 * other member finishes when its representative does (sim/sym.c).
 *
 * It applies while every flow in the network belongs to such a
 * collective (the "symmetric regime"); anything else posted meanwhile
 * (another algorithm, a point-to-point op, members of one class posting
 * at different instants, a mismatch, a timeout or hang to diagnose) ends
 * the regime first: the regime's collectives are simulated again in full
 * from the regime's start up to now, in a fresh network, and the run goes
 * on from there without the shortcut ("materialised"). Results are the
 * same either way (tests/sim_symmetry.c); HERD_SIM_SYMMETRY=0 turns the
 * shortcut off. Conditions: docs/simulator.md, "Cost and limits". */
#ifndef HERD_SIM_SYM_H
#define HERD_SIM_SYM_H

#include <stdint.h>

#include "sim/sim.h"

/* An instance's mode. */
enum {
    SIM_SYM_UNDECIDED, /* posted this instant, decided at its end */
    SIM_SYM_ON,        /* representatives only */
    SIM_SYM_FULL       /* every member, as without the shortcut */
};

/* Per candidate instance. */
typedef struct sim_isym {
    int mode;
    sim_req_t **req; /* per member: its request (representatives' too) */
    int *pend;       /* members posted this instant, in posting order */
    int npend;
    int listed;      /* on the world's list of instances posted this instant */
    int held;        /* in the regime: kept until it ends (a replay needs it) */
    uint8_t *saved;  /* replay: the members' flags before it */
    sim_req_t proto; /* replay: stands for a finished member's request (the
                        program may have freed it) */
} sim_isym_t;

/* A class of a symmetric instance started (at the end of instant t). */
typedef struct sim_sym_start {
    uint64_t t;
    sim_inst_t *inst;
    int cls;
} sim_sym_start_t;

/* A member that the replay finished at the replay's last instant. */
typedef struct sim_sym_done {
    sim_inst_t *inst;
    int m;
    herd_status_t st;
} sim_sym_done_t;

typedef struct sim_sym {
    int g, p; /* period (ranks per node) and world size */
    /* the regime: its instances (held) and their classes' starts */
    sim_inst_t **insts;
    size_t ninsts, icap, nactive; /* nactive: not every member done */
    sim_sym_start_t *starts;
    size_t nstarts, scap;
    uint64_t t0; /* when it began (the network was empty) */
    /* candidates posted this instant */
    sim_inst_t **pend;
    size_t npend, pcap;
    uint32_t *cls; /* scratch: members per class */
    /* representatives of materialised instances: their queued events
     * are dropped, they are freed at the end */
    sim_exec_t **zombies;
    size_t nz, zcap;
    sim_sym_done_t *done;
    size_t ndone, dcap;
    int replaying;
    uint64_t nsym, nbreaks; /* instances run symmetric; materialisations */
} sim_sym_t;

/* Set up for a world (w->sym stays NULL when the options rule the
 * shortcut out). */
herd_status_t sim_sym_init(sim_world_t *w);
void sim_sym_fini(sim_world_t *w);

/* coll.c: whether a new instance may run symmetric (`rotational`: its
 * members' schedules are rotations of one another); allocates
 * inst->sym when so. */
herd_status_t sim_sym_candidate(sim_world_t *w, sim_inst_t *inst,
                                int rotational);
/* A post of a candidate that is not yet decided or is symmetric: kept
 * for the end of the instant. */
herd_status_t sim_sym_post(sim_world_t *w, sim_inst_t *inst, int m,
                           sim_req_t *req);
/* Anything that cannot run alongside the regime ends it first. */
void sim_sym_break(sim_world_t *w);
/* Something that is not deferred starts now (an executor, a flow): the
 * regime ends and what was posted earlier in this instant starts first,
 * without the shortcut. */
void sim_sym_flush(sim_world_t *w);
/* engine.c: the instant is over (nothing else queued at w->now). */
void sim_sym_instant_end(sim_world_t *w);
/* The run is over (hang, timeout, interrupt): the diagnosis needs every
 * member's state. */
void sim_sym_settle(sim_world_t *w);
/* coll.c: member m's executor made, given its early messages and
 * started (symmetric instances are world ones: m is world rank m). */
herd_status_t sim_coll_start_member(sim_world_t *w, sim_inst_t *inst, int m,
                                    sim_req_t *req);
/* coll.c: representative m of a symmetric instance is done: so is its
 * class. Returns 1 when it handled the member. */
int sim_sym_member_done(sim_world_t *w, sim_inst_t *inst, int m,
                        herd_status_t st);
/* coll.c: 1 while inst's record must not be freed; 2 while not even
 * its schedule arrays (a replay runs). */
int sim_sym_held(const sim_world_t *w, const sim_inst_t *inst);
/* A symmetric instance's message for member `dst` from `src` goes to
 * dst's representative, from src shifted alike. */
static inline void sim_sym_map(const sim_world_t *w, int *dst, int *src)
{
    int g = w->sym->g, p = w->sym->p, shift = *dst - *dst % g;
    *dst -= shift;
    *src = (*src - shift + p) % p;
}

static inline int sim_sym_on(const sim_inst_t *inst)
{
    return inst->sym && inst->sym->mode == SIM_SYM_ON;
}

#endif
