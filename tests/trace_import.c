/* tests/trace_import.c - herd import over the committed PyTorch profiler
 * traces (tests/data/kineto/: real 1.13 and 2.15 CPU/gloo DDP runs at
 * bucket_cap_mb 0.01 and 25, gzipped; a synthetic NCCL GPU job, plain
 * JSON): the collectives in the herd trace equal the all_reduce sizes
 * read straight from the fixture, the model's buckets agree with them,
 * the scenario loads (herd check), the trace replays on sim, a sweep and
 * a scale-out run on the imported scenario, the measured timeline feeds
 * herd ddp report and herd compare; folders, SPMD imports, missing
 * fields and files that are not traces get named errors. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "support/testutil.h"

static void rm_dir(char *dir)
{
    char cmd[1100];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    tu_run(cmd, NULL);
    free(dir);
}

static const char *fixture(char *buf, size_t len, const char *name)
{
    char rel[256];
    snprintf(rel, sizeof(rel), "kineto/%s", name);
    return tu_data_path(buf, len, rel);
}

/* `herd import` of a fixture's two ranks into dir; returns the exit code
 * and the output (caller frees). */
static int import_pair(const char *tag, const char *extra, const char *dir,
                       char **out)
{
    char r0[1024], r1[1024], n0[128], n1[128], args[4096];
    snprintf(n0, sizeof(n0), "%s_rank0.json%s", tag,
             strncmp(tag, "nccl", 4) ? ".gz" : "");
    snprintf(n1, sizeof(n1), "%s_rank1.json%s", tag,
             strncmp(tag, "nccl", 4) ? ".gz" : "");
    snprintf(args, sizeof(args), "import %s %s -o %s %s",
             fixture(r0, sizeof(r0), n0), fixture(r1, sizeof(r1), n1), dir,
             extra ? extra : "");
    return tu_herd(args, out);
}

/* A fixture's JSON (gzipped or not). */
static json_t *load_fixture(const char *name)
{
    char path[1024];
    gzFile f = gzopen(fixture(path, sizeof(path), name), "rb");
    ck_assert_ptr_nonnull(f);
    size_t cap = 8 << 20, n = 0;
    char *buf = malloc(cap);
    int got;
    while ((got = gzread(f, buf + n, (unsigned)(cap - n - 1))) > 0)
        n += (size_t)got;
    gzclose(f);
    buf[n] = 0;
    json_error_t e;
    json_t *root = json_loads(buf, 0, &e);
    free(buf);
    ck_assert_msg(root, "%s: %s", name, e.text);
    return root;
}

/* The all_reduce sizes (elements) of the traced steps, read straight
 * from a fixture: c10d::allreduce_ inside ProfilerStep ranges. */
static size_t fixture_allreduce_sizes(const char *name, uint64_t *v, size_t max)
{
    json_t *root = load_fixture(name), *ev;
    json_t *evs =
        json_is_array(root) ? root : json_object_get(root, "traceEvents");
    double lo = 1e300, hi = 0;
    size_t i, k = 0;
    json_array_foreach(evs, i, ev)
    {
        const char *nm = json_string_value(json_object_get(ev, "name"));
        if (nm && !strncmp(nm, "ProfilerStep#", 13)) {
            double ts = json_number_value(json_object_get(ev, "ts"));
            double d = json_number_value(json_object_get(ev, "dur"));
            lo = ts < lo ? ts : lo;
            hi = ts + d > hi ? ts + d : hi;
        }
    }
    json_array_foreach(evs, i, ev)
    {
        const char *nm = json_string_value(json_object_get(ev, "name"));
        double ts = json_number_value(json_object_get(ev, "ts"));
        json_t *a = json_object_get(ev, "args");
        if (!nm || ts < lo || ts >= hi || k == max)
            continue;
        if (!strcmp(nm, "c10d::allreduce_"))
            v[k++] = (uint64_t)json_integer_value(json_array_get(
                json_array_get(
                    json_array_get(json_object_get(a, "Input Dims"), 0), 0),
                0));
    }
    json_decref(root);
    return k;
}

/* all_reduce counts of the SPMD ops of dir/trace.json, in order. */
static size_t trace_allreduce_counts(const char *dir, uint64_t *v, size_t max)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/trace.json", dir);
    json_error_t e;
    json_t *root = json_load_file(path, 0, &e), *op;
    ck_assert_msg(root, "%s: %s", path, e.text);
    size_t i, k = 0;
    json_array_foreach(json_object_get(root, "ops"), i, op)
    {
        const char *o = json_string_value(json_object_get(op, "op"));
        if (!strcmp(o, "all_reduce") && k < max)
            v[k++] = (uint64_t)json_integer_value(json_object_get(op, "count"));
    }
    json_decref(root);
    return k;
}

static int run_in(const char *dir, const char *args, char **out)
{
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "cd %s && %s %s 2>&1", dir, tu_herd_binary(),
             args);
    return tu_run(cmd, out);
}

/* The whole loop on a two-rank import: check, replay, sweep, report,
 * compare. */
static void loop_checks(const char *dir)
{
    char *out = NULL;
    ck_assert_int_eq(run_in(dir, "check scenario.yaml", &out), 0);
    free(out);
    ck_assert_int_eq(run_in(dir, "check trace.json", &out), 0);
    free(out);
    ck_assert_int_eq(run_in(dir, "check replay.yaml", &out), 0);
    free(out);
    ck_assert_int_eq(
        run_in(dir, "replay trace.json --engine sim -o rp --no-plots", &out),
        0);
    free(out);
    int rc = run_in(dir,
                    "sweep scenario.yaml --set ddp.bucket_cap_mb=1,5,25,100 "
                    "--out sw --jobs 1",
                    &out);
    ck_assert_msg(rc == 0, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "recommendation"));
    free(out);
    rc = run_in(dir, "ddp report scenario.yaml --from timeline.json", &out);
    ck_assert_msg(rc == 0 && strstr(out, "steady state"), "%s", out);
    free(out);
    rc = run_in(dir, "compare rp/timeline.json timeline.json -o cmp --no-plots",
                &out);
    ck_assert_msg(rc == 0 && strstr(out, "unmatched: 0 predicted, 0 "
                                         "measured"),
                  "%s", out);
    free(out);
}

START_TEST(torch215_small_buckets)
{
    char *dir = tu_tmpdir(), *out = NULL;
    int rc = import_pair("torch215_b0.01", NULL, dir, &out);
    ck_assert_msg(rc == 0, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "bucket check: ok"));
    ck_assert_ptr_nonnull(
        strstr(out, "buckets seen (bytes): [11304, 524288, 18432, 2048]"));
    free(out);
    uint64_t want[64], got[64];
    size_t nw =
        fixture_allreduce_sizes("torch215_b0.01_rank0.json.gz", want, 64);
    size_t ng = trace_allreduce_counts(dir, got, 64);
    ck_assert_uint_eq(nw, 12); /* 4 buckets x 3 traced steps */
    ck_assert_uint_eq(ng, nw);
    for (size_t i = 0; i < nw; i++)
        ck_assert_uint_eq(got[i], want[i]);
    char path[1024];
    snprintf(path, sizeof(path), "%s/scenario.yaml", dir);
    char *sc = tu_read_file(path);
    ck_assert_ptr_nonnull(strstr(sc, "bucket_cap_mb: 0.01"));
    ck_assert_ptr_nonnull(strstr(sc, "first_bucket_mb: 0"));
    ck_assert_ptr_nonnull(strstr(sc, "herd calibrate"));
    /* a gloo job runs herd's model of gloo (sim/gloo_lower.c) */
    ck_assert_ptr_nonnull(strstr(sc, "algorithm: gloo"));
    free(sc);
    snprintf(path, sizeof(path), "%s/replay.yaml", dir);
    sc = tu_read_file(path);
    ck_assert_ptr_nonnull(strstr(sc, "algorithm: gloo"));
    free(sc);
    snprintf(path, sizeof(path), "%s/model.json", dir);
    json_t *m = json_load_file(path, 0, NULL);
    ck_assert_ptr_nonnull(m);
    ck_assert_uint_eq(json_array_size(json_object_get(m, "params")), 10);
    ck_assert(json_real_value(json_object_get(json_object_get(m, "compute"),
                                              "forward_s")) > 0);
    json_decref(m);
    loop_checks(dir);
    rm_dir(dir);
}
END_TEST

START_TEST(torch215_one_bucket)
{
    char *dir = tu_tmpdir(), *out = NULL;
    int rc = import_pair("torch215_b25", NULL, dir, &out);
    ck_assert_msg(rc == 0, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "buckets seen (bytes): [556072]"));
    ck_assert_ptr_nonnull(strstr(out, "bucket check: ok"));
    free(out);
    uint64_t want[64], got[64];
    size_t nw = fixture_allreduce_sizes("torch215_b25_rank0.json.gz", want, 64);
    size_t ng = trace_allreduce_counts(dir, got, 64);
    ck_assert_uint_eq(nw, 3);
    ck_assert_uint_eq(ng, nw);
    for (size_t i = 0; i < nw; i++)
        ck_assert_uint_eq(got[i], want[i]);
    loop_checks(dir);
    rm_dir(dir);
}
END_TEST

/* PyTorch 1.13 writes no shapes: named, then supplied by --model. */
START_TEST(torch113_needs_model)
{
    char *dir = tu_tmpdir(), *out = NULL, model[1024], extra[1200];
    int rc = import_pair("torch113_b0.01", NULL, dir, &out);
    ck_assert_int_eq(rc, 2);
    ck_assert_ptr_nonnull(strstr(out, "no parameter shapes"));
    ck_assert_ptr_nonnull(strstr(out, "--model FILE"));
    ck_assert_ptr_nonnull(strstr(out, "no world size"));
    free(out);
    snprintf(extra, sizeof(extra), "--model %s",
             fixture(model, sizeof(model), "small_cnn.json"));
    for (int k = 0; k < 2; k++) {
        rc = import_pair(k ? "torch113_b25" : "torch113_b0.01", extra, dir,
                         &out);
        ck_assert_msg(rc == 0, "%s", out);
        ck_assert_ptr_nonnull(strstr(out, "bucket check: ok"));
        ck_assert_ptr_nonnull(strstr(out, "1 all_reduce(s) per backward"));
        free(out);
        uint64_t got[64];
        size_t ng = trace_allreduce_counts(dir, got, 64);
        ck_assert_uint_eq(ng, 3); /* 1.13: the first bucket is 1 MiB */
        for (size_t i = 0; i < ng; i++)
            ck_assert_uint_eq(got[i], 556072 / 4);
    }
    loop_checks(dir);
    rm_dir(dir);
}
END_TEST

START_TEST(nccl_synthetic)
{
    char *dir = tu_tmpdir(), *out = NULL;
    int rc = import_pair("nccl_synth", NULL, dir, &out);
    ck_assert_msg(rc == 0, "%s", out);
    ck_assert_ptr_nonnull(
        strstr(out, "buckets seen (bytes): [1048576, 1052672, 2048]"));
    ck_assert_ptr_nonnull(strstr(out, "bucket check: ok"));
    /* the backward on the GPU's clock (1.3-1.43 ms of kernels), not the
     * CPU's (0.07 ms: it runs ahead) */
    const char *b = strstr(out, "backward ");
    ck_assert_ptr_nonnull(b);
    double bwd_ms = atof(b + 9);
    ck_assert_msg(bwd_ms > 1.2 && bwd_ms < 1.5, "%s", out);
    free(out);
    uint64_t got[64];
    size_t ng = trace_allreduce_counts(dir, got, 64);
    ck_assert_uint_eq(ng, 6);
    ck_assert_uint_eq(got[0], 262144);
    ck_assert_uint_eq(got[1], 263168);
    ck_assert_uint_eq(got[2], 512);
    char path[1024];
    snprintf(path, sizeof(path), "%s/scenario.yaml", dir);
    char *sc = tu_read_file(path);
    ck_assert_ptr_nonnull(strstr(sc, "backend nccl, NCCL 2.21.5"));
    ck_assert_ptr_null(strstr(sc, "comm_streams"));
    ck_assert_ptr_null(strstr(sc, "algorithm: gloo"));
    free(sc);
    /* rank 1 is slower: its compute is a per-rank variant */
    snprintf(path, sizeof(path), "%s/trace.json", dir);
    char *tr = tu_read_file(path);
    ck_assert_ptr_nonnull(strstr(tr, "\"per_rank\""));
    free(tr);
    loop_checks(dir);
    rm_dir(dir);
}
END_TEST

/* A folder of gzipped and plain traces; rank 0 alone as an SPMD job. */
START_TEST(folder_and_spmd)
{
    char *dir = tu_tmpdir(), *out = NULL, cmd[4096], r0[1024], r1[1024];
    snprintf(cmd, sizeof(cmd),
             "mkdir -p %s/in && cp %s %s/in/ && zcat %s > "
             "%s/in/torch215_b25_rank1.json && echo x > %s/in/notes.txt",
             dir, fixture(r0, sizeof(r0), "torch215_b25_rank0.json.gz"), dir,
             fixture(r1, sizeof(r1), "torch215_b25_rank1.json.gz"), dir, dir);
    ck_assert_int_eq(tu_run(cmd, NULL), 0);
    snprintf(cmd, sizeof(cmd), "import %s/in -o %s/out", dir, dir);
    int rc = tu_herd(cmd, &out);
    ck_assert_msg(rc == 0, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "imported 2 trace(s): world 2"));
    free(out);
    snprintf(cmd, sizeof(cmd), "import %s --world-size 4 -o %s/spmd", r0, dir);
    rc = tu_herd(cmd, &out);
    ck_assert_msg(rc == 0, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "SPMD import: 1 of 4 ranks traced"));
    free(out);
    snprintf(cmd, sizeof(cmd), "%s/spmd", dir);
    rc = run_in(cmd, "sim replay.yaml --set cluster.nodes=2 -o s --no-plots",
                &out);
    ck_assert_msg(rc == 0, "%s", out);
    free(out);
    rc = run_in(cmd,
                "sweep scenario.yaml --set cluster.nodes=1,2 --out sw --jobs 1",
                &out);
    ck_assert_msg(rc == 0, "%s", out);
    free(out);
    rm_dir(dir);
}
END_TEST

/* The model.json "compute" object of an import, as text. */
static char *model_compute(const char *dir)
{
    char path[1100];
    snprintf(path, sizeof(path), "%s/model.json", dir);
    json_error_t e;
    json_t *m = json_load_file(path, 0, &e);
    ck_assert_msg(m != NULL, "%s: %s", path, e.text);
    char *txt = json_dumps(json_object_get(m, "compute"), JSON_SORT_KEYS);
    json_decref(m);
    return txt;
}

/* Several traces of one rank are runs of one job: the model's compute
 * is measured over all their steps, the trace comes from the first run.
 * Two copies of one run pool to the same medians; traces of two jobs
 * (other buckets) are not runs of one. */
START_TEST(runs_pooled)
{
    char *dir = tu_tmpdir(), *out = NULL, cmd[8192], r0[1024], r1[1024];
    fixture(r0, sizeof(r0), "torch215_b25_rank0.json.gz");
    fixture(r1, sizeof(r1), "torch215_b25_rank1.json.gz");
    snprintf(cmd, sizeof(cmd),
             "mkdir -p %s/in && cp %s %s/in/r1_rank0.json.gz && cp %s "
             "%s/in/r1_rank1.json.gz && cp %s %s/in/r2_rank0.json.gz && cp "
             "%s %s/in/r2_rank1.json.gz",
             dir, r0, dir, r1, dir, r0, dir, r1, dir);
    ck_assert_int_eq(tu_run(cmd, NULL), 0);
    snprintf(cmd, sizeof(cmd), "import %s/in -o %s/pooled", dir, dir);
    int rc = tu_herd(cmd, &out);
    ck_assert_msg(rc == 0, "%s", out);
    ck_assert_msg(strstr(out, "rank 0: 2 runs,") &&
                      strstr(out, "rank 1: 2 runs,") &&
                      strstr(out, "r1_rank0.json.gz)"),
                  "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "imported 2 trace(s): world 2"));
    free(out);
    snprintf(cmd, sizeof(cmd), "import %s %s -o %s/single", r0, r1, dir);
    rc = tu_herd(cmd, &out);
    ck_assert_msg(rc == 0, "%s", out);
    free(out);
    char a[1100], b[1100];
    snprintf(a, sizeof(a), "%s/pooled", dir);
    snprintf(b, sizeof(b), "%s/single", dir);
    char *ca = model_compute(a), *cb = model_compute(b);
    ck_assert_str_eq(ca, cb);
    free(ca);
    free(cb);
    /* traces of one rank from two different jobs are refused */
    char other[1024];
    fixture(other, sizeof(other), "torch215_b0.01_rank0.json.gz");
    snprintf(cmd, sizeof(cmd), "import %s %s -o %s/mixed", r0, other, dir);
    rc = tu_herd(cmd, &out);
    ck_assert_msg(rc == 2 && strstr(out, "are both rank 0 but not runs of "
                                         "one job"),
                  "%d: %s", rc, out);
    free(out);
    uint64_t ga[64], gb[64];
    size_t na = trace_allreduce_counts(a, ga, 64);
    size_t nb = trace_allreduce_counts(b, gb, 64);
    ck_assert_uint_eq(na, nb);
    for (size_t i = 0; i < na; i++)
        ck_assert_uint_eq(ga[i], gb[i]);
    rm_dir(dir);
}
END_TEST

/* Without ProfilerStep (no schedule, no step()): one step per DDP
 * forward. */
START_TEST(no_profiler_steps)
{
    char *dir = tu_tmpdir(), *out = NULL, path[2][1024], args[4096];
    for (int r = 0; r < 2; r++) {
        char name[64];
        snprintf(name, sizeof(name), "torch215_b0.01_rank%d.json.gz", r);
        json_t *root = load_fixture(name), *evs = json_array(), *ev;
        size_t i;
        json_array_foreach(json_object_get(root, "traceEvents"), i, ev)
        {
            const char *nm = json_string_value(json_object_get(ev, "name"));
            if (!nm || strncmp(nm, "ProfilerStep#", 13))
                json_array_append(evs, ev);
        }
        json_object_set_new(root, "traceEvents", evs);
        snprintf(path[r], sizeof(path[r]), "%s/nostep_rank%d.json", dir, r);
        ck_assert_int_eq(json_dump_file(root, path[r], 0), 0);
        json_decref(root);
    }
    snprintf(args, sizeof(args), "import %s %s -o %s/o", path[0], path[1], dir);
    int rc = tu_herd(args, &out);
    ck_assert_msg(rc == 0, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "3 steps"));
    ck_assert_ptr_nonnull(strstr(out, "bucket check: ok"));
    free(out);
    rm_dir(dir);
}
END_TEST

static json_t *used_map_event(const char *name, const char *cat, int tid,
                              double ts)
{
    return json_pack("{s:s,s:s,s:s,s:i,s:i,s:f,s:f,s:{s:s,s:i,s:i,s:s,s:i,"
                     "s:s,s:[i,i]}}",
                     "ph", "X", "cat", cat, "name", name, "pid",
                     strcmp(cat, "kernel") ? 100 : 0, "tid", tid, "ts", ts,
                     "dur", 5.0, "args", "Collective name", "allreduce",
                     "In msg nelems", 4, "Out msg nelems", 4, "dtype", "Int",
                     "Group size", 2, "Process Group Name", "0",
                     "Process Group Ranks", 0, 1);
}

/* find_unused_parameters=True: the reducer all_reduces its int32
 * used-parameter map during backward; it is no bucket. */
START_TEST(used_map_not_a_bucket)
{
    char *dir = tu_tmpdir(), *out = NULL, path[2][1024], args[4096];
    for (int r = 0; r < 2; r++) {
        char name[64];
        snprintf(name, sizeof(name), "nccl_synth_rank%d.json", r);
        json_t *root = load_fixture(name);
        json_t *evs = json_object_get(root, "traceEvents");
        double slow = 1.0 + 0.1 * r;
        for (int step = 0; step < 2; step++) {
            double t0 = step ? 1005000 : 1000000;
            json_array_append_new(evs, used_map_event("record_param_comms",
                                                      "cpu_op", 2, t0 + 1073));
            json_array_append_new(
                evs, used_map_event("ncclDevKernel_AllReduce_Sum_i32_RING_LL",
                                    "kernel", 20, t0 + 2400 * slow));
        }
        snprintf(path[r], sizeof(path[r]), "%s/map_rank%d.json", dir, r);
        ck_assert_int_eq(json_dump_file(root, path[r], 0), 0);
        json_decref(root);
    }
    snprintf(args, sizeof(args), "import %s %s -o %s/o", path[0], path[1], dir);
    tu_herd(args, &out);
    ck_assert_msg(strstr(out, "the used-parameter map"), "%s", out);
    ck_assert_msg(strstr(out, "buckets seen (bytes): [1048576, 1052672, "
                              "2048]"),
                  "%s", out);
    free(out);
    snprintf(args, sizeof(args), "%s/o/scenario.yaml", dir);
    char *sc = tu_read_file(args);
    ck_assert_ptr_nonnull(strstr(sc, "find_unused_parameters: true"));
    free(sc);
    snprintf(args, sizeof(args), "%s/o/trace.json", dir);
    char *tr = tu_read_file(args);
    ck_assert_ptr_nonnull(strstr(tr, "\"label\": \"unused_map\""));
    ck_assert_ptr_nonnull(strstr(tr, "\"dtype\": \"int32\""));
    free(tr);
    rm_dir(dir);
}
END_TEST

/* Timestamps in epoch microseconds (some Kineto versions) read as well. */
START_TEST(epoch_timestamps)
{
    char *dir = tu_tmpdir(), *out = NULL, path[2][1024], args[4096];
    for (int r = 0; r < 2; r++) {
        char name[64];
        snprintf(name, sizeof(name), "torch215_b25_rank%d.json.gz", r);
        json_t *root = load_fixture(name), *ev;
        size_t i;
        json_array_foreach(json_object_get(root, "traceEvents"), i, ev)
        {
            json_t *ts = json_object_get(ev, "ts");
            if (json_is_number(ts))
                json_object_set_new(ev, "ts",
                                    json_real(json_number_value(ts) + 1.7e15));
        }
        snprintf(path[r], sizeof(path[r]), "%s/epoch_rank%d.json", dir, r);
        ck_assert_int_eq(json_dump_file(root, path[r], 0), 0);
        json_decref(root);
    }
    snprintf(args, sizeof(args), "import %s %s -o %s/o", path[0], path[1], dir);
    int rc = tu_herd(args, &out);
    ck_assert_msg(rc == 0 && strstr(out, "buckets seen (bytes): [556072]"),
                  "%s", out);
    free(out);
    rm_dir(dir);
}
END_TEST

/* Four ranks (the two traced ones twice, renumbered in distributedInfo):
 * world and groups from the traces, every rank's compute kept. */
START_TEST(four_ranks)
{
    char *dir = tu_tmpdir(), *out = NULL, args[4096];
    for (int r = 0; r < 4; r++) {
        char name[64], path[1024];
        snprintf(name, sizeof(name), "torch215_b0.01_rank%d.json.gz", r % 2);
        json_t *root = load_fixture(name);
        json_t *di = json_object_get(root, "distributedInfo");
        json_object_set_new(di, "rank", json_integer(r));
        json_object_set_new(di, "world_size", json_integer(4));
        json_t *pg = json_array_get(json_object_get(di, "pg_config"), 0);
        json_object_set_new(pg, "ranks", json_pack("[i,i,i,i]", 0, 1, 2, 3));
        snprintf(path, sizeof(path), "%s/t%d.pt.trace.json", dir, r);
        ck_assert_int_eq(json_dump_file(root, path, 0), 0);
        json_decref(root);
    }
    snprintf(args, sizeof(args), "import %s -o %s/o", dir, dir);
    int rc = tu_herd(args, &out);
    ck_assert_msg(rc == 0, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "imported 4 trace(s): world 4"));
    ck_assert_ptr_nonnull(strstr(out, "bucket check: ok"));
    ck_assert_ptr_null(strstr(out, "SPMD"));
    free(out);
    snprintf(args, sizeof(args), "%s/o", dir);
    rc = run_in(args, "sim replay.yaml -o s --no-plots", &out);
    ck_assert_msg(rc == 0, "%s", out);
    free(out);
    rc = run_in(args, "ddp report scenario.yaml --from timeline.json", &out);
    ck_assert_msg(rc == 0 && strstr(out, "steady state"), "%s", out);
    free(out);
    rm_dir(dir);
}
END_TEST

/* A cap that does not reproduce the trace: exit 1 with both lists. */
START_TEST(bucket_mismatch)
{
    char *dir = tu_tmpdir(), *out = NULL;
    int rc = import_pair("torch215_b0.01", "--bucket-cap-mb 100", dir, &out);
    ck_assert_int_eq(rc, 1);
    ck_assert_ptr_nonnull(strstr(out, "bucket check failed"));
    ck_assert_ptr_nonnull(strstr(out, "[11304, 524288, 18432, 2048]"));
    ck_assert_ptr_nonnull(strstr(out, "[556072]"));
    free(out);
    rm_dir(dir);
}
END_TEST

static void expect_error(const char *dir, const char *name, const char *content,
                         const char *msg)
{
    char path[1024], args[2048];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(content, f);
    fclose(f);
    snprintf(args, sizeof(args), "import %s -o %s/o", path, dir);
    char *out = NULL;
    int rc = tu_herd(args, &out);
    ck_assert_msg(rc == 2 && strstr(out, msg), "%s: rc %d: %s", name, rc, out);
    ck_assert_ptr_nonnull(strstr(out, name)); /* names the file */
    free(out);
}

START_TEST(not_a_trace)
{
    char *dir = tu_tmpdir(), *out = NULL, args[2048];
    expect_error(dir, "s.yaml", "cluster: {nodes: 2}\n", "not JSON");
    expect_error(dir, "s.yaml", "cluster: {nodes: 2}\n",
                 "expected a PyTorch profiler trace");
    expect_error(dir, "o.json", "{\"a\": 1, \"b\": 2}",
                 "found an object with keys: a, b");
    expect_error(dir, "n.json", "42", "found a number");
    expect_error(dir, "tl.json",
                 "{\"otherData\": {\"format\": \"herd-timeline\"}, "
                 "\"traceEvents\": []}",
                 "a herd timeline, not a PyTorch profiler trace");
    expect_error(dir, "e.json",
                 "[{\"ph\": \"X\", \"name\": \"aten::mm\", \"ts\": 1, "
                 "\"dur\": 2}]",
                 "none of a training job");
    expect_error(dir, "t.json",
                 "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"x\"}]}",
                 "without numeric \"ts\" and \"dur\"");
    expect_error(dir, "g.json",
                 "[{\"ph\": \"X\", \"name\": \"ProfilerStep#1\", \"ts\": 1, "
                 "\"dur\": 10}]",
                 "but no collectives");
    snprintf(args, sizeof(args), "import %s/missing.json", dir);
    ck_assert_int_eq(tu_herd(args, &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "no such file"));
    free(out);
    snprintf(args, sizeof(args), "mkdir -p %s/empty", dir);
    tu_run(args, NULL);
    snprintf(args, sizeof(args), "import %s/empty", dir);
    ck_assert_int_eq(tu_herd(args, &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "no *.json or *.json.gz traces"));
    free(out);
    ck_assert_int_eq(tu_herd("import --help", &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "usage: herd import"));
    free(out);
    rm_dir(dir);
}
END_TEST

/* A model without compute: a loud warning, and the report stays
 * consistent (exposed communication within the step). */
START_TEST(no_compute_warning)
{
    char *dir = tu_tmpdir(), *out = NULL, model[1024], path[1024], cmd[4096];
    snprintf(path, sizeof(path), "%s/s.yaml", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f,
            "cluster: {nodes: 1, gpus_per_node: 2, intra: {bandwidth: 1GB/s, "
            "latency: 5us}}\nworkload:\n  ddp: {model: %s, bucket_cap_mb: "
            "0.01, steps: 3}\n",
            fixture(model, sizeof(model), "small_cnn.json"));
    fclose(f);
    snprintf(cmd, sizeof(cmd), "ddp run %s --json %s/r.json", path, dir);
    int rc = tu_herd(cmd, &out);
    ck_assert_msg(rc == 0, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "WARNING"));
    ck_assert_ptr_nonnull(strstr(out, "has no compute"));
    free(out);
    snprintf(path, sizeof(path), "%s/r.json", dir);
    json_t *r = json_load_file(path, 0, NULL), *st;
    ck_assert_ptr_nonnull(r);
    size_t i;
    json_array_foreach(json_object_get(r, "steps"), i, st)
    {
        double step = json_real_value(json_object_get(st, "max_step_s"));
        double exp = json_real_value(json_object_get(st, "exposed_s"));
        ck_assert_msg(exp <= step, "iter %zu: exposed %g > step %g", i, exp,
                      step);
    }
    json_t *s = json_object_get(r, "steady");
    ck_assert(json_real_value(json_object_get(s, "exposed_s")) <=
              json_real_value(json_object_get(s, "step_s")) * 1.000001);
    json_decref(r);
    rm_dir(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trace_import");
    TCase *tc = tcase_create("import");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, torch215_small_buckets);
    tcase_add_test(tc, torch215_one_bucket);
    tcase_add_test(tc, torch113_needs_model);
    tcase_add_test(tc, nccl_synthetic);
    tcase_add_test(tc, folder_and_spmd);
    tcase_add_test(tc, runs_pooled);
    tcase_add_test(tc, no_profiler_steps);
    tcase_add_test(tc, used_map_not_a_bucket);
    tcase_add_test(tc, epoch_timestamps);
    tcase_add_test(tc, four_ranks);
    tcase_add_test(tc, bucket_mismatch);
    tcase_add_test(tc, not_a_trace);
    tcase_add_test(tc, no_compute_warning);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
