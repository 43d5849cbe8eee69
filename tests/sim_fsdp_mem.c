/* tests/sim_fsdp_mem.c - FSDP against a device's memory (fsdp.gpu_mem,
 * the key and check the 3D-parallel model shares: workload/common/mem.h):
 * a job that fits says so, one that does not says which rank and by how
 * much and exits 1, the rank with the most is found when the ranks
 * differ; herd sweep marks the configurations over it and never
 * recommends them, however fast, and its memory plot draws the limit;
 * herd fsdp strategies takes the scenario's key; bad values are refused
 * with the place of the key (file:line:column); a hung run's memory plot
 * draws. */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "support/testutil.h"
#include "workload/common/mem.h"

static char *dir;

static void setup(void)
{
    dir = tu_tmpdir();
}

static void teardown(void)
{
    tu_tmpdir_free(dir);
}

/* DIR/f.yaml: gpt2_small's FSDP job on 2 nodes of 8, two steps, then
 * `extra` (lines of the fsdp section). Returns its path in path. */
static const char *scenario(char *path, size_t len, const char *extra)
{
    snprintf(path, len, "%s/f.yaml", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f,
            "name: f\ncluster: {nodes: 2, gpus_per_node: 8}\n"
            "workload:\n  fsdp:\n    model: gpt_1_3b\n    steps: 2\n"
            "    param_dtype: bfloat16\n    reduce_dtype: float32\n%s",
            extra);
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

static char *herd(int want, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static char *herd(int want, const char *fmt, ...)
{
    char args[8192], *out = NULL;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof(args), fmt, ap);
    va_end(ap);
    int rc = tu_herd(args, &out);
    ck_assert_ptr_nonnull(out);
    ck_assert_msg(rc == want, "herd %s: exit %d, not %d\n%s", args, rc, want,
                  out);
    return out;
}

static void has(const char *s, const char *want)
{
    ck_assert_msg(strstr(s, want), "'%s' not in:\n%s", want, s);
}

static char *file(const char *name)
{
    return tu_read_in(dir, name);
}

/* The value, check and verdict the two workloads share. */
START_TEST(test_common_key)
{
    double g = -1;
    char err[256], *text = NULL;
    size_t len = 0;
    ck_assert_int_eq(wl_gpu_mem_parse("fsdp", "80", &g, err, sizeof(err)),
                     HERD_OK);
    ck_assert_double_eq(g, 80);
    ck_assert_int_eq(wl_gpu_mem_parse("fsdp", "0", &g, err, sizeof(err)),
                     HERD_OK);
    ck_assert_double_eq(g, 0);
    const char *bad[] = {"-1", "lots", "", "nan", "inf", "1e10", "80GiB"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        g = 7;
        ck_assert_int_eq(
            wl_gpu_mem_parse("parallel", bad[i], &g, err, sizeof(err)),
            HERD_ERR_PARSE);
        ck_assert_double_eq(g, 7); /* untouched */
        has(err, "parallel.gpu_mem: bad value '");
        has(err, "GiB");
    }
    ck_assert(wl_gpu_mem_fits(0, UINT64_MAX)); /* no limit */
    ck_assert(wl_gpu_mem_fits(1, 1073741824));
    ck_assert(!wl_gpu_mem_fits(1, 1073741825));
    FILE *f = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(f);
    wl_gpu_mem_verdict(f, "fsdp", 0, 0, 1); /* nothing without a limit */
    wl_gpu_mem_verdict(f, "fsdp", 2, 0, 1073741824);
    fputc('|', f);
    wl_gpu_mem_verdict(f, "fsdp", 2, 5, 3 * 1073741824ull);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_str_eq(text, " of 2.00 GiB: fits| of 2.00 GiB: DOES NOT FIT "
                           "fsdp.gpu_mem: rank 5 is 1.00 GiB (50%) over");
    free(text);
}
END_TEST

/* herd fsdp run: fits (exit 0, the JSON says so), does not fit (exit 1,
 * which rank, by how much), the rank with the most when one wraps
 * differently. gpt_1_3b FULL_SHARD on 16 ranks: 1843.3 MiB per rank. */
START_TEST(test_run_fits_or_not)
{
    char path[1024];
    scenario(path, sizeof(path), "    gpu_mem: 80\n");
    char *out = herd(0, "fsdp run %s --json %s/r.json", path, dir);
    has(out, "total on the device 1843.3 MiB of 80.00 GiB: fits");
    free(out);
    char *js = file("r.json");
    has(js, "\"gpu_mem_gib\": 80");
    has(js, "\"fits\": true");
    has(js, "\"rank\": 0");
    free(js);
    /* --gpu-mem overrides the scenario's: 1843.3 MiB on 1.5 GiB (1536
     * MiB) is 307.3 MiB (0.30 GiB, 20%) over */
    out = herd(1, "fsdp run %s --gpu-mem 1.5 --json %s/r.json", path, dir);
    has(out, "1843.3 MiB of 1.50 GiB: DOES NOT FIT fsdp.gpu_mem: rank 0 is "
             "0.30 GiB (20%) over");
    ck_assert_ptr_null(strstr(out, "outcome:")); /* it ran: no hang */
    free(out);
    js = file("r.json");
    has(js, "\"fits\": false");
    free(js);
    /* rank 5 wraps the whole model into the root: it holds the most */
    out = herd(1,
               "fsdp run %s --set fsdp.bad_wrap_ranks=[5] --set "
               "fsdp.bad_wrap=none --set fsdp.gpu_mem=1.5 --quiet --json "
               "%s/r.json",
               path, dir);
    free(out);
    js = file("r.json");
    has(js, "\"rank\": 5");
    free(js);
    out = herd(1,
               "fsdp run %s --set fsdp.bad_wrap_ranks=[5] --set "
               "fsdp.bad_wrap=none --set fsdp.gpu_mem=1.5",
               path);
    has(out, "memory per rank (the most: rank 5)");
    has(out, "DOES NOT FIT fsdp.gpu_mem: rank 5 is");
    free(out);
}
END_TEST

/* A sweep whose fastest configuration (HYBRID_SHARD, 3098 MiB) does not
 * fit 2.5 GiB: marked, not the best, not recommended; FULL_SHARD (1843
 * MiB) is. The memory plot has the limit line and the same marks. */
START_TEST(test_sweep_marks_unfit)
{
    char path[1024];
    scenario(path, sizeof(path), "    gpu_mem: 2.5\n");
    char *out = herd(0,
                     "sweep %s --set fsdp.strategy=HYBRID_SHARD,FULL_SHARD "
                     "--jobs 1 --no-plot --out %s/o",
                     path, dir);
    const char *hy = strstr(out, "HYBRID_SHARD       25");
    const char *fu = strstr(out, "FULL_SHARD       25");
    ck_assert_msg(hy && fu, "%s", out);
    ck_assert_msg(!strncmp(strchr(hy, '\n') - 20, "does not fit gpu_mem", 20),
                  "%s", out);
    has(out, "*       FULL_SHARD");
    const char *rec = strstr(out, "recommendation:");
    ck_assert_ptr_nonnull(rec);
    ck_assert_msg(!strstr(rec, "HYBRID"), "%s", out);
    has(rec, "FULL_SHARD");
    free(out);
    char *dat = file("o/sweep.dat"), *mem = file("o/memory.dat");
    char *mgp = file("o/memory.gp");
    /* sweep.dat: x value step exposed comm ok fits within best current */
    has(dat, "0\tHYBRID_SHARD\t");
    const char *l0 = strstr(dat, "0\tHYBRID_SHARD\t");
    const char *l1 = strstr(dat, "1\tFULL_SHARD\t");
    ck_assert(l0 && l1);
    int f0 = -1, b0 = -1, f1 = -1, b1 = -1;
    ck_assert_int_eq(
        sscanf(l0, "%*d\t%*s\t%*f\t%*f\t%*f\t%*d\t%d\t%*d\t%d", &f0, &b0), 2);
    ck_assert_int_eq(
        sscanf(l1, "%*d\t%*s\t%*f\t%*f\t%*f\t%*d\t%d\t%*d\t%d", &f1, &b1), 2);
    ck_assert_int_eq(f0, 0);
    ck_assert_int_eq(b0, 0);
    ck_assert_int_eq(f1, 1);
    ck_assert_int_eq(b1, 1);
    /* memory: the limit line (2.5 GiB, in GiB or MiB), the marks */
    ck_assert_msg(strstr(mgp, "lim = 2.500000\n") ||
                      strstr(mgp, "lim = 2560.000000\n"),
                  "%s", mgp);
    has(mgp, "fsdp.gpu_mem: the line");
    /* the line in view even over bars far below it */
    has(mgp, "set yrange [0:(lim > 0 ? lim * 1.08 : 0) < *]");
    double tot[2], lim = strstr(mgp, "unit = 'GiB'") ? 2.5 : 2560;
    int fits[2];
    for (int k = 0; k < 2; k++) {
        const char *l = strstr(mem, k ? "\n1\t" : "\n0\t");
        ck_assert_ptr_nonnull(l);
        ck_assert_int_eq(
            sscanf(l + 1, "%*d\t%*s\t%*f\t%*f\t%*f\t%*f\t%*f\t%lf\t%*f\t%d",
                   &tot[k], &fits[k]),
            2);
        ck_assert_int_eq(fits[k], tot[k] <= lim);
    }
    ck_assert_int_eq(fits[0], 0);
    ck_assert_int_eq(fits[1], 1);
    free(dat);
    free(mem);
    free(mgp);
}
END_TEST

/* herd fsdp strategies honours the scenario's fsdp.gpu_mem. */
START_TEST(test_strategies_take_the_key)
{
    char path[1024];
    scenario(path, sizeof(path), "    gpu_mem: 2.5\n");
    char *out = herd(0, "fsdp strategies %s --no-plot --out %s/st", path, dir);
    has(out, "HYBRID_SHARD");
    has(out, "does not fit gpu_mem");
    has(out, "fastest that fits: FULL_SHARD");
    free(out);
    char *gp = file("st/strategies.gp");
    ck_assert_msg(strstr(gp, "lim = 2.500000\n") ||
                      strstr(gp, "lim = 2560.000000\n"),
                  "%s", gp);
    free(gp);
}
END_TEST

/* Negative and non-numeric values: refused where they are written. */
START_TEST(test_bad_values)
{
    char path[1024];
    scenario(path, sizeof(path), "    gpu_mem: -1\n");
    char *out = herd(2, "fsdp run %s", path);
    has(out, "f.yaml:9:14: fsdp.gpu_mem: bad value '-1'");
    free(out);
    scenario(path, sizeof(path), "    gpu_mem: plenty\n");
    out = herd(2,
               "sweep %s --set fsdp.strategy=FULL_SHARD,NO_SHARD --no-plot "
               "--out %s/o",
               path, dir);
    has(out, "f.yaml:9:14: fsdp.gpu_mem: bad value 'plenty'");
    free(out);
    scenario(path, sizeof(path), "");
    out = herd(2, "fsdp run %s --set fsdp.gpu_mem=-3", path);
    has(out, "fsdp.gpu_mem: bad value '-3'");
    free(out);
    out = herd(2, "fsdp run %s --gpu-mem lots", path);
    has(out, "--gpu-mem 'lots': expected GiB");
    free(out);
    /* the parallel workload's key: the same check */
    out = herd(2, "parallel run --set parallel.gpu_mem=x --quiet");
    has(out, "parallel.gpu_mem: bad value 'x'");
    free(out);
}
END_TEST

/* A run that hangs has no step time: its memory plot still draws (the
 * gnuplot script once failed on a step axis with no points: exit 2). */
START_TEST(test_hang_memory_plot)
{
    char src[1024];
    tu_src_path(src, sizeof(src), "scenarios/fsdp-wrap-mismatch.yaml");
    char *out =
        herd(1, "fsdp run %s --quiet --gpu-mem 80 --plots %s/d", src, dir);
    free(out);
    char *mem = file("d/memory.dat"), *gp = file("d/memory.gp");
    has(mem, "\tNaN\t1\t0\t0\n"); /* no step time, fits, not ok */
    has(gp, "have_step = 0\n");
    free(mem);
    free(gp);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_fsdp_mem");
    TCase *tc = tcase_create("gpu_mem");
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_common_key);
    tcase_add_test(tc, test_run_fits_or_not);
    tcase_add_test(tc, test_sweep_marks_unfit);
    tcase_add_test(tc, test_strategies_take_the_key);
    tcase_add_test(tc, test_bad_values);
    tcase_add_test(tc, test_hang_memory_plot);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
