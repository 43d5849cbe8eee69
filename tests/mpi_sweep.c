/* tests/mpi_sweep.c - `herd sweep` under mpirun: the processes of the job
 * share the runs and rank 0 reports; the table, the recommendation, the
 * TSV and the plot are byte for byte those of the one-process sweep
 * (only the first line, with the wall time, and the line naming the
 * processes differ). Skipped (77) without the mpi engine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_harness.h"

/* `herd sweep` of ddp-gpt2-4n in DIR/SUB (relative --out, so the "wrote"
 * lines match), under mpirun with np > 0. */
static char *sweep_in(const char *dir, const char *sub, int np,
                      const char *sets)
{
    char scn[1024], cmd[3000], *out = NULL;
    snprintf(cmd, sizeof(cmd),
             "mkdir -p %s/%s && cd %s/%s && %s sweep %s %s "
             "--out out --quiet",
             dir, sub, dir, sub, tu_herd_binary(),
             tu_src_path(scn, sizeof(scn), "scenarios/ddp-gpt2-4n.yaml"), sets);
    int rc;
    if (np > 0) {
        char sh[3100];
        snprintf(sh, sizeof(sh), "sh -c '%s'", cmd);
        rc = mh_mpirun(np, NULL, sh, &out);
    } else {
        char full[3100];
        snprintf(full, sizeof(full), "%s </dev/null 2>&1", cmd);
        rc = tu_run(full, &out);
    }
    ck_assert_msg(rc == 0, "np %d: rc %d: %s", np, rc, out);
    return out;
}

/* The output without its first line and the MPI line. */
static const char *body(const char *out)
{
    const char *b = strchr(out, '\n');
    ck_assert_ptr_nonnull(b);
    b++;
    if (!strncmp(b, "shared by ", 10))
        b = strchr(b, '\n') + 1;
    return b;
}

static char *slurp(const char *dir, const char *sub, const char *name)
{
    char path[2048];
    snprintf(path, sizeof(path), "%s/%s/out/%s", dir, sub, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = calloc(1, 1 << 20);
    ck_assert_ptr_nonnull(buf);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void same_sweep(const char *sets, int np, int files)
{
    char *dir = tu_tmpdir();
    char *one = sweep_in(dir, "one", 0, sets);
    char *many = sweep_in(dir, "many", np, sets);
    char want[64];
    snprintf(want, sizeof(want), "shared by %d processes of an MPI job", np);
    ck_assert_msg(strstr(many, want), "%s", many);
    ck_assert_msg(!strstr(one, "shared by"), "%s", one);
    ck_assert_str_eq(body(one), body(many));
    ck_assert_ptr_nonnull(strstr(one, "recommendation: "));
    const char *names[] = {"sweep.tsv", "sweep.svg"};
    for (int i = 0; i < files; i++) {
        char *a = slurp(dir, "one", names[i]),
             *b = slurp(dir, "many", names[i]);
        ck_assert_msg((a == NULL) == (b == NULL), "%s: in one run only",
                      names[i]);
        if (a)
            ck_assert_str_eq(a, b);
        else
            ck_assert_msg(i > 0, "no %s", names[i]); /* the plot: gnuplot */
        free(a);
        free(b);
    }
    free(one);
    free(many);
    char rm[1200];
    snprintf(rm, sizeof(rm), "rm -rf %s", dir);
    tu_run(rm, NULL);
    free(dir);
}

/* One numeric axis: table, recommendation, TSV and plot; five values on
 * three processes (two each at most; the layouts some caps share are
 * simulated once, by their owner). */
START_TEST(test_one_axis)
{
    same_sweep("--set ddp.bucket_cap_mb=1,5,25,100,400 --set ddp.steps=2", 3,
               2);
}
END_TEST

/* A cross product on more processes than a share needs. */
START_TEST(test_cross_product)
{
    same_sweep("--set cluster.inter.bandwidth=50Gbps,400Gbps "
               "--set ddp.bucket_cap_mb=5,25 --set ddp.steps=2",
               5, 0);
}
END_TEST

int main(void)
{
    if (!mh_engine_built()) {
        printf("mpi_sweep: the mpi engine is not built: skipped\n");
        return 77;
    }
    Suite *s = suite_create("mpi_sweep");
    TCase *tc = tcase_create("sweep");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_one_axis);
    tcase_add_test(tc, test_cross_product);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
