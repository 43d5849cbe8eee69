/* tests/trace_scenario.c - scenario files: units, every section, --set
 * overrides, the shipped scenarios, and malformed input (bad units, wrong
 * types, unknown keys, truncated, garbage, deep nesting, huge numbers)
 * that must fail with file:line:column and the expected form. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support/testutil.h"
#include "trace/scenario.h"
#include "trace/units.h"

START_TEST(test_units)
{
    uint64_t b;
    double d;
    ck_assert_int_eq(trace_parse_bytes("25MiB", &b), 0);
    ck_assert_uint_eq(b, 25u << 20);
    ck_assert_int_eq(trace_parse_bytes("1GB", &b), 0);
    ck_assert_uint_eq(b, 1000000000u);
    ck_assert_int_eq(trace_parse_bytes("4096", &b), 0);
    ck_assert_uint_eq(b, 4096);
    ck_assert_int_eq(trace_parse_bytes("64 KiB", &b), 0);
    ck_assert_uint_eq(b, 65536);
    ck_assert_int_eq(trace_parse_bytes("1.5B", &b), HERD_ERR_PARSE);
    ck_assert_int_eq(trace_parse_bytes("12Mb", &b), HERD_ERR_PARSE);
    ck_assert_int_eq(trace_parse_bytes("-1", &b), HERD_ERR_PARSE);
    ck_assert_int_eq(trace_parse_bytes("99999999TiB", &b), HERD_ERR_OVERFLOW);
    ck_assert_int_eq(trace_parse_bytes("1e999", &b), HERD_ERR_OVERFLOW);
    ck_assert_int_eq(trace_parse_bandwidth("400Gbps", &d), 0);
    ck_assert(fabs(d - 50e9) < 1);
    ck_assert_int_eq(trace_parse_bandwidth("370GB/s", &d), 0);
    ck_assert(fabs(d - 370e9) < 1);
    ck_assert_int_eq(trace_parse_bandwidth("100 Mbps", &d), 0);
    ck_assert(fabs(d - 12.5e6) < 1e-3);
    ck_assert_int_eq(trace_parse_bandwidth("400", &d), HERD_ERR_PARSE);
    ck_assert_int_eq(trace_parse_bandwidth("nan", &d), HERD_ERR_PARSE);
    ck_assert_int_eq(trace_parse_time("5us", &d), 0);
    ck_assert(fabs(d - 5e-6) < 1e-15);
    ck_assert_int_eq(trace_parse_time("1.5ms", &d), 0);
    ck_assert(fabs(d - 1.5e-3) < 1e-15);
    ck_assert_int_eq(trace_parse_time("500ns", &d), 0);
    ck_assert_int_eq(trace_parse_time("2s", &d), 0);
    ck_assert(d == 2);
    ck_assert_int_eq(trace_parse_time("2 sec", &d), HERD_ERR_PARSE);
    ck_assert_int_eq(trace_parse_time("", &d), HERD_ERR_PARSE);
    char buf[32];
    trace_format_bytes(25u << 20, buf, sizeof(buf));
    ck_assert_str_eq(buf, "25MiB");
    trace_format_time(5e-6, buf, sizeof(buf));
    ck_assert_str_eq(buf, "5us");
}
END_TEST

static const char *full_yaml =
    "name: full\n"
    "cluster:\n"
    "  nodes: 4\n"
    "  gpus_per_node: 8\n"
    "  intra: {bandwidth: 370GB/s, latency: 1us}\n"
    "  inter: {bandwidth: 400Gbps, latency: 5us, burst: 128KiB}\n"
    "  nics_per_node: 4\n"
    "  topology: fattree\n"
    "  oversubscription: 2\n"
    "  nodes_per_leaf: 2\n"
    "  spine_latency: 2us\n"
    "collectives:\n"
    "  algorithm: ring\n"
    "  algorithms: {broadcast: tree}\n"
    "  channels: 2\n"
    "  chunk: 512KiB\n"
    "  reduce_bandwidth: 200GB/s\n"
    "  nccl_model: true\n"
    "workload:\n"
    "  sweep:\n"
    "    collective: all_gather\n"
    "    algorithms: [ring, direct]\n"
    "    min: 1KiB\n"
    "    max: 16MiB\n"
    "    factor: 4\n"
    "    dtype: bfloat16\n"
    "    op: max\n"
    "    iters: 3\n"
    "    warmup: 0\n"
    "stragglers:\n"
    "  ranks:\n"
    "    - {rank: 3, compute: 1.5}\n"
    "    - {rank: 9, nic: 0.5, intra: 0.25}\n"
    "  links:\n"
    "    - {a: 0, b: 8, bandwidth: 0.5, latency: 10us}\n"
    "  jitter: {kind: lognormal, sigma: 0.05}\n"
    "faults:\n"
    "  - {rank: 5, at: 10ms}\n"
    "  - {rank: 6, at_step: 3}\n"
    "timeout: 30s\n"
    "seed: 42\n";

/* How the writer spells full_yaml's cluster (the golden text). */
static const char *golden_cluster =
    "name: full\n"
    "cluster:\n"
    "  nodes: 4\n"
    "  gpus_per_node: 8\n"
    "  intra: {bandwidth: 370GB/s, latency: 1us}\n"
    "  inter: {bandwidth: 50GB/s, latency: 5us, burst: 131072B}\n"
    "  nics_per_node: 4\n"
    "  topology: fattree\n"
    "  spine_latency: 2us\n"
    "  oversubscription: 2\n"
    "  nodes_per_leaf: 2\n"
    "collectives:\n"
    "  algorithms: {all_reduce: ring, broadcast: tree, reduce: ring, "
    "all_gather: ring, reduce_scatter: ring, barrier: ring}\n"
    "  channels: 2\n"
    "  chunk: 524288B\n"
    "  nccl_model: true\n"
    "  reduce_bandwidth: 200GB/s\n";

START_TEST(test_full)
{
    char err[512] = "";
    trace_scenario_t *sc = NULL;
    ck_assert_msg(trace_scenario_load_string(full_yaml, "full.yaml", &sc, err,
                                             sizeof(err)) == 0,
                  "%s", err);
    ck_assert_str_eq(sc->name, "full");
    ck_assert_int_eq(sc->sim.cluster.nodes, 4);
    ck_assert_int_eq(trace_scenario_world_size(sc), 32);
    ck_assert(fabs(sc->sim.cluster.intra.bandwidth - 370e9) < 1);
    ck_assert(fabs(sc->sim.cluster.inter.bandwidth - 50e9) < 1);
    ck_assert(fabs(sc->sim.cluster.inter.latency - 5e-6) < 1e-12);
    ck_assert_uint_eq(sc->sim.cluster.inter.burst, 131072);
    ck_assert_int_eq(sc->sim.cluster.topo, HERD_TOPO_FATTREE);
    ck_assert(sc->sim.cluster.oversub == 2);
    ck_assert_int_eq(sc->algo[HERD_COLL_ALL_REDUCE], HERD_ALGO_RING);
    ck_assert_int_eq(sc->algo[HERD_COLL_BROADCAST], HERD_ALGO_TREE);
    /* ring does not implement all_to_all: it keeps auto */
    ck_assert_int_eq(sc->algo[HERD_COLL_ALL_TO_ALL], HERD_ALGO_AUTO);
    ck_assert_int_eq(sc->algo[HERD_COLL_SEND], HERD_ALGO_AUTO);
    ck_assert_int_eq(sc->channels, 2);
    ck_assert_int_eq(sc->sim.nccl_model, 1);
    ck_assert_uint_eq(sc->chunk_bytes, 512 * 1024);
    ck_assert_int_eq(sc->wl_kind, TRACE_WL_SWEEP);
    ck_assert_int_eq(sc->sweep.coll, HERD_COLL_ALL_GATHER);
    ck_assert_int_eq(sc->sweep.nalgos, 2);
    ck_assert_int_eq(sc->sweep.algos[1], HERD_ALGO_DIRECT);
    ck_assert_uint_eq(sc->sweep.max_bytes, 16u << 20);
    ck_assert_int_eq(sc->sweep.dtype, HERD_BFLOAT16);
    ck_assert_int_eq(sc->sweep.op, HERD_MAX);
    ck_assert_uint_eq(sc->sim.nranks_overrides, 2);
    ck_assert(sc->sim.ranks[0].compute_factor == 1.5);
    ck_assert(sc->sim.ranks[1].intra_factor == 0.25);
    ck_assert_uint_eq(sc->sim.nlink_overrides, 1);
    ck_assert(fabs(sc->sim.links[0].extra_latency - 1e-5) < 1e-12);
    ck_assert_int_eq(sc->sim.jitter, HERD_JITTER_LOGNORMAL);
    ck_assert_uint_eq(sc->sim.nfaults, 2);
    ck_assert(fabs(sc->sim.faults[0].at_time - 0.01) < 1e-12);
    ck_assert_int_eq(sc->sim.faults[0].at_step, -1);
    ck_assert_int_eq(sc->sim.faults[1].at_step, 3);
    ck_assert(sc->timeout_s == 30);
    ck_assert_uint_eq(sc->sim.seed, 42);
    trace_scenario_destroy(sc);
}
END_TEST

static char *dump(const trace_scenario_t *sc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(trace_scenario_write(sc, f), 0);
    fclose(f);
    return buf;
}

START_TEST(test_write_round_trip)
{
    char err[512] = "";
    trace_scenario_t *sc = NULL, *back = NULL;
    ck_assert_int_eq(trace_scenario_load_string(full_yaml, "full.yaml", &sc,
                                                err, sizeof(err)),
                     0);
    char *text = dump(sc);
    ck_assert_msg(trace_scenario_load_string(text, "dump.yaml", &back, err,
                                             sizeof(err)) == 0,
                  "%s\n%s", err, text);
    char *again = dump(back);
    ck_assert_str_eq(text, again);
    ck_assert(memcmp(&sc->sim.cluster, &back->sim.cluster,
                     sizeof(sc->sim.cluster)) == 0);
    ck_assert(memcmp(sc->algo, back->algo, sizeof(sc->algo)) == 0);
    ck_assert(sc->sim.faults[0].at_time == back->sim.faults[0].at_time);
    ck_assert(sc->sim.links[0].extra_latency ==
              back->sim.links[0].extra_latency);
    ck_assert(sc->timeout_s == back->timeout_s);
    ck_assert_msg(strstr(text, golden_cluster), "%s", text);
    free(again);
    free(text);
    trace_scenario_destroy(back);
    trace_scenario_destroy(sc);
    /* DDP values come back as written: scalars quoted when needed */
    const char *ddp = "workload:\n  ddp: {model: \"a: b.json\", hooks: "
                      "[fp16, {x: 1}], cap: 25}\n";
    ck_assert_int_eq(
        trace_scenario_load_string(ddp, "d.yaml", &sc, err, sizeof(err)), 0);
    text = dump(sc);
    ck_assert_msg(strstr(text, "    model: \"a: b.json\"\n    hooks: [fp16, "
                               "{x: 1}]\n    cap: 25\n"),
                  "%s", text);
    ck_assert_int_eq(
        trace_scenario_load_string(text, "d2.yaml", &back, err, sizeof(err)),
        0);
    ck_assert_str_eq(trace_scenario_ddp_get(back, "model")->value, "a: b.json");
    ck_assert_str_eq(trace_scenario_ddp_get(back, "hooks")->value,
                     "[fp16, {x: 1}]");
    free(text);
    trace_scenario_destroy(back);
    trace_scenario_destroy(sc);
}
END_TEST

START_TEST(test_set)
{
    char err[512] = "";
    trace_scenario_t *sc = NULL;
    ck_assert_int_eq(trace_scenario_load_string(full_yaml, "full.yaml", &sc,
                                                err, sizeof(err)),
                     0);
    ck_assert_int_eq(
        trace_scenario_set(sc, "cluster.nodes", "2", err, sizeof(err)), 0);
    ck_assert_int_eq(trace_scenario_world_size(sc), 16);
    ck_assert_int_eq(trace_scenario_set(sc, "cluster.inter.bandwidth",
                                        "100Gbps", err, sizeof(err)),
                     0);
    ck_assert(fabs(sc->sim.cluster.inter.bandwidth - 12.5e9) < 1);
    ck_assert_int_eq(trace_scenario_set(sc, "workload.sweep.algorithms",
                                        "[tree]", err, sizeof(err)),
                     0);
    ck_assert_int_eq(sc->sweep.nalgos, 1);
    ck_assert_int_eq(trace_scenario_set(sc, "stragglers.ranks",
                                        "[{rank: 1, compute: 3}]", err,
                                        sizeof(err)),
                     0);
    ck_assert_uint_eq(sc->sim.nranks_overrides, 1);
    ck_assert(sc->sim.ranks[0].compute_factor == 3);
    ck_assert_int_eq(
        trace_scenario_set(sc, "ddp.bucket_cap_mb", "5", err, sizeof(err)), 0);
    ck_assert_str_eq(trace_scenario_ddp_get(sc, "bucket_cap_mb")->value, "5");
    ck_assert_int_eq(
        trace_scenario_set(sc, "ddp.bucket_cap_mb", "10", err, sizeof(err)), 0);
    ck_assert_str_eq(trace_scenario_ddp_get(sc, "bucket_cap_mb")->value, "10");
    ck_assert_uint_eq(sc->nddp, 1);
    ck_assert_int_eq(
        trace_scenario_set(sc, "cluster.nodez", "2", err, sizeof(err)),
        HERD_ERR_PARSE);
    ck_assert_msg(strstr(err, "unknown key 'nodez'") && strstr(err, "nodes"),
                  "%s", err);
    ck_assert_int_eq(
        trace_scenario_set(sc, "cluster.nodes", "two", err, sizeof(err)),
        HERD_ERR_PARSE);
    ck_assert_msg(strstr(err, "--set cluster.nodes") &&
                      strstr(err, "expected an integer"),
                  "%s", err);
    ck_assert_int_eq(
        trace_scenario_set(sc, "cluster.nodes.x", "2", err, sizeof(err)),
        HERD_ERR_PARSE);
    trace_scenario_destroy(sc);
}
END_TEST

/* Each bad input must fail with this text somewhere in the message. */
static const struct {
    const char *yaml;
    const char *expect;
} bad_cases[] = {
    {"cluster:\n  nodes: 64\n  intra: {bandwidth: 370GB, latency: 1us}\n",
     "x.yaml:3:22: cluster.intra.bandwidth: bad value '370GB'; expected a "
     "bandwidth"},
    {"cluster:\n  nodes: sixty\n", "x.yaml:2:10: cluster.nodes: expected an "
                                   "integer, got 'sixty'"},
    {"cluster:\n  nodez: 4\n", "x.yaml:2:3: cluster: unknown key 'nodez'; "
                               "expected one of: nodes, gpus_per_node"},
    {"cluster:\n  nodes: [1, 2]\n", "x.yaml:2:11: cluster.nodes: expected an "
                                    "integer, got a sequence"},
    {"cluster: 5\n", "cluster: expected a mapping"},
    {"cluster:\n  nodes: 99999999999999999999999\n", "out of range"},
    {"cluster:\n  nodes: 0\n", "expected an integer in [1, 65536]"},
    {"timeout: 5 parsecs\n", "x.yaml:1:10: timeout: bad value '5 parsecs'; "
                             "expected a time such as"},
    {"cluster:\n  intra: {bandwidth: 370GB/s, latency: 1us\n", "x.yaml:"},
    {"cluster:\n  nodes: 2\n  gpus_per_node: 2\nfaults:\n  - {rank: 9, at: "
     "1ms}\n",
     "faults[0]: rank 9 does not exist (world size 4)"},
    {"faults:\n  - {rank: 1}\n", "expected 'at: <time>' or 'at_step: <n>'"},
    {"workload:\n  sweep: {min: 1MiB, max: 1KiB}\n", "expected 0 < min <= max"},
    {"workload:\n  sweep: {algorithms: [ring, warp]}\n",
     "unknown value 'warp'; expected an algorithm"},
    {"seed: -3\n", "expected a non-negative integer"},
    {"collectives: {nccl_model: yes}\n", "expected true or false, got 'yes'"},
    {"workload:\n  trace: t.json\n  sweep: {min: 1KiB}\n",
     "x.yaml:3:11: workload.sweep: the workload is already a trace"},
    {"\x01\x02\x03garbage: [\xff\n", "x.yaml:"},
    {"", "x.yaml"},
    {"- just\n- a list\n", "(top): expected a mapping"},
    {"cluster:\n  nodes:\n", "cluster.nodes: expected an integer"},
};

START_TEST(test_bad)
{
    char err[512] = "";
    trace_scenario_t *sc = NULL;
    herd_status_t st = trace_scenario_load_string(bad_cases[_i].yaml, "x.yaml",
                                                  &sc, err, sizeof(err));
    ck_assert_msg(st != 0, "case %d accepted", _i);
    ck_assert_ptr_null(sc);
    ck_assert_msg(strstr(err, bad_cases[_i].expect), "case %d: got '%s'", _i,
                  err);
}
END_TEST

START_TEST(test_deep)
{
    /* Deep nesting and a huge document must be refused, not crash. */
    size_t n = 100000;
    char *y = malloc(2 * n + 16);
    strcpy(y, "cluster: ");
    size_t k = strlen(y);
    for (size_t i = 0; i < n; i++)
        y[k++] = '[';
    y[k] = '\0';
    char err[512] = "";
    trace_scenario_t *sc = NULL;
    ck_assert_int_ne(
        trace_scenario_load_string(y, "deep.yaml", &sc, err, sizeof(err)), 0);
    ck_assert_msg(strstr(err, "deep.yaml:1:"), "%s", err);
    free(y);
}
END_TEST

START_TEST(test_shipped)
{
    static const char *files[] = {
        "scenarios/h100-8gpu.yaml", "scenarios/64n-8gpu-400g.yaml",
        "scenarios/straggler.yaml", "scenarios/dead-rank.yaml",
        "scenarios/mismatch-hang.yaml"};
    char path[1024], err[512];
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        trace_scenario_t *sc = NULL;
        tu_src_path(path, sizeof(path), files[i]);
        ck_assert_msg(trace_scenario_load(path, &sc, err, sizeof(err)) == 0,
                      "%s", err);
        ck_assert_int_ne(sc->wl_kind, TRACE_WL_NONE);
        trace_scenario_destroy(sc);
    }
    trace_scenario_t *sc = NULL;
    tu_src_path(path, sizeof(path), "scenarios/64n-8gpu-400g.yaml");
    ck_assert_int_eq(trace_scenario_load(path, &sc, err, sizeof(err)), 0);
    ck_assert_int_eq(trace_scenario_world_size(sc), 512);
    ck_assert(fabs(sc->sim.cluster.inter.bandwidth - 50e9) < 1);
    trace_scenario_destroy(sc);
    ck_assert_int_eq(
        trace_scenario_load("/nonexistent/x.yaml", &sc, err, sizeof(err)),
        HERD_ERR_IO);
    ck_assert_msg(strstr(err, "/nonexistent/x.yaml: cannot open"), "%s", err);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trace_scenario");
    TCase *tc = tcase_create("scenario");
    tcase_add_test(tc, test_units);
    tcase_add_test(tc, test_full);
    tcase_add_test(tc, test_set);
    tcase_add_test(tc, test_write_round_trip);
    tcase_add_loop_test(tc, test_bad, 0,
                        (int)(sizeof(bad_cases) / sizeof(bad_cases[0])));
    tcase_add_test(tc, test_deep);
    tcase_add_test(tc, test_shipped);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
