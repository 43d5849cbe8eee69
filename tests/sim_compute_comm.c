/* tests/sim_compute_comm.c - cluster.compute_comm_slowdown: on a CPU
 * backend a rank's network processing waits for cycles while the rank
 * computes, so its ports and NIC carry 1 / (1 + s) of their capacity for
 * that long and their flows share what is left. Closed forms on one
 * 10 MB message over a 100 MB/s link (100 ms alone): the sender or the
 * receiver computing for its first 40 ms, both at once (one slowed link
 * is the bottleneck, not two slowdowns multiplied), herd_compute_until,
 * compute itself slowed by the send (comm_cpu_slowdown as well), two
 * flows sharing a slowed NIC, 0 (the default) changing nothing; the scenario
 * key reads, writes back and refuses bad values. */
#include <herd/herd.h>
#include <herd/sim.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/testutil.h"
#include "trace/scenario.h"

#define MSG 10000000u /* bytes */

typedef struct k {
    int sender_computes, receiver_computes, second_flow;
    int until;           /* the receiver computes with herd_compute_until */
    double cpu_slowdown; /* cluster.comm_cpu_slowdown too */
    uint64_t t_recv;     /* rank 1: its receive of rank 0's message ended */
    uint64_t t_recv2;    /* rank 2: the second flow's receive ended */
} k_t;

/* Rank 0 sends MSG bytes to rank 1 (and, with second_flow, to rank 2 on
 * the same NIC); whoever is told to computes for 40 ms right after
 * posting. */
static int prog(herd_comm_t *c, void *arg)
{
    k_t *k = arg;
    void *buf;
    herd_req_t *req, *req2 = NULL;
    int me = herd_comm_rank(c);
    if (herd_alloc(c, MSG, &buf) != HERD_OK)
        return 1;
    herd_status_t st;
    if (me == 0) {
        st = herd_send(c, buf, MSG, HERD_UINT8, 1, 0, &req);
        if (st == HERD_OK && k->second_flow)
            st = herd_send(c, buf, MSG, HERD_UINT8, 2, 0, &req2);
    } else if (me == 1 || k->second_flow) {
        st = herd_recv(c, buf, MSG, HERD_UINT8, 0, 0, &req);
    } else {
        return 0;
    }
    if (st != HERD_OK)
        return 1;
    double done;
    if (me == 1 && k->receiver_computes && k->until)
        herd_compute_until(c, 40e-3, req, "until", &done);
    else if ((me == 0 && k->sender_computes) ||
             (me == 1 && k->receiver_computes))
        herd_compute(c, 40e-3, NULL);
    herd_req_wait(req);
    herd_req_free(req);
    if (req2) {
        herd_req_wait(req2);
        herd_req_free(req2);
    }
    if (me == 1)
        k->t_recv = herd_now(c);
    if (me == 2)
        k->t_recv2 = herd_now(c);
    return 0;
}

static void run(k_t *k, double slowdown)
{
    herd_sim_opts_t o;
    herd_sim_opts_init(&o);
    o.cluster.nodes = k->second_flow ? 3 : 2;
    o.cluster.gpus_per_node = 1;
    o.cluster.inter.bandwidth = 1e8;
    o.cluster.inter.latency = 0;
    o.cluster.compute_comm_slowdown = slowdown;
    o.cluster.comm_cpu_slowdown = k->cpu_slowdown;
    herd_init_t init = {
        .backend = "sim", .world_size = o.cluster.nodes, .engine_opts = &o};
    herd_run_info_t info;
    ck_assert_int_eq(herd_run(&init, prog, k, &info), HERD_OK);
    herd_run_info_clear(&info);
}

/* One closed form: the setting, and when rank 1 (and rank 2) have the
 * message. */
typedef struct closed {
    const char *what;
    k_t k;
    double slowdown;
    uint64_t want, want2;
} closed_t;

static const closed_t cases[] = {
    /* 10 MB at 100 MB/s */
    {"off by default",
     {.sender_computes = 1, .receiver_computes = 1},
     0,
     100000000u,
     0},
    /* 40 ms at 80 MB/s move 3.2 MB, the other 6.8 MB take 68 ms */
    {"the sender computes", {.sender_computes = 1}, 0.25, 108000000u, 0},
    {"the receiver computes", {.receiver_computes = 1}, 0.25, 108000000u, 0},
    /* each end's link is at 80 MB/s: the path is, not 64 */
    {"both compute",
     {.sender_computes = 1, .receiver_computes = 1},
     0.25,
     108000000u,
     0},
    /* the 40 ms end before the message: the same as herd_compute */
    {"the receiver computes until",
     {.receiver_computes = 1, .until = 1},
     0.25,
     108000000u,
     0},
    /* the send in flight stretches the 40 ms of compute to 50 ms
     * (comm_cpu_slowdown), during which the NIC moves 80 MB/s: 4 MB, the
     * other 6 MB at 100 MB/s take 60 ms */
    {"both slowdowns",
     {.sender_computes = 1, .cpu_slowdown = 0.25},
     0.25,
     110000000u,
     0},
    /* two flows share rank 0's NIC: 40 MB/s each for 40 ms (1.6 MB), then
     * 50 MB/s each for the other 8.4 MB: 168 ms + 40 ms */
    {"a shared NIC",
     {.sender_computes = 1, .second_flow = 1},
     0.25,
     208000000u,
     208000000u},
};

START_TEST(closed_forms)
{
    const closed_t *c = &cases[_i];
    k_t k = c->k;
    run(&k, c->slowdown);
    ck_assert_msg(k.t_recv + 2 >= c->want && k.t_recv <= c->want + 2,
                  "%s: %llu ns, want %llu", c->what,
                  (unsigned long long)k.t_recv, (unsigned long long)c->want);
    ck_assert_msg(!c->want2 ||
                      (k.t_recv2 + 2 >= c->want2 && k.t_recv2 <= c->want2 + 2),
                  "%s: second flow %llu ns, want %llu", c->what,
                  (unsigned long long)k.t_recv2, (unsigned long long)c->want2);
}
END_TEST

START_TEST(scenario_key)
{
    trace_scenario_t *sc = NULL;
    char err[512];
    char *text = tu_scenario_written(
        "cluster: {nodes: 2, compute_comm_slowdown: 0.05}\n");
    ck_assert_msg(strstr(text, "compute_comm_slowdown: 0.05"), "%s", text);
    free(text);
    /* unset: not written (outputs of older scenarios stay as they were) */
    text = tu_scenario_written(NULL);
    ck_assert_ptr_null(strstr(text, "compute_comm_slowdown"));
    free(text);
    ck_assert_int_ne(
        trace_scenario_load_string("cluster: {compute_comm_slowdown: -2}\n",
                                   "s.yaml", &sc, err, sizeof(err)),
        HERD_OK);
    ck_assert_msg(strstr(err, "s.yaml:1:34: cluster.compute_comm_slowdown: "
                              "-2 is out of range"),
                  "%s", err);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_compute_comm");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, closed_forms, 0,
                        (int)(sizeof(cases) / sizeof(cases[0])));
    tcase_add_test(tc, scenario_key);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
