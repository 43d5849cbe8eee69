/* tests/unit_gpu_check.c - scripts/gpu-check.sh's paths that need no GPU:
 * shellcheck-clean, usage errors, "no GPU" (a clear message and exit 3),
 * missing build tools (exit 4 with the --pack / HERD_PREBUILT advice), a
 * prebuilt directory without herd, and a full rehearsal of every step on
 * the tcp engine with this build as HERD_PREBUILT (summary printed last,
 * verdict OK). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/testutil.h"

/* The script's path, in `buf`. */
static const char *script(char *buf, size_t len)
{
    return tu_src_path(buf, len, "scripts/gpu-check.sh");
}

static int run(const char *env, const char *args, char **out)
{
    char cmd[4096], path[1024];
    int n = snprintf(cmd, sizeof(cmd), "%s bash %s %s 2>&1", env,
                     script(path, sizeof(path)), args);
    ck_assert_int_lt(n, (int)sizeof(cmd));
    int rc = tu_run(cmd, out);
    ck_assert_ptr_nonnull(*out);
    return rc;
}

START_TEST(shellcheck_clean)
{
    char *out = NULL;
    if (tu_run("command -v shellcheck >/dev/null 2>&1", &out) != 0) {
        free(out);
        return; /* not installed here */
    }
    free(out);
    char cmd[1200], path[1024];
    snprintf(cmd, sizeof(cmd), "shellcheck %s 2>&1",
             script(path, sizeof(path)));
    int rc = tu_run(cmd, &out);
    ck_assert_msg(rc == 0, "%s", out ? out : "");
    free(out);
}
END_TEST

START_TEST(usage_errors)
{
    char *out = NULL;
    ck_assert_int_eq(run("", "--bogus", &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "unknown argument '--bogus'"));
    free(out);
    ck_assert_int_eq(run("", "--engine cuda", &out), 2);
    ck_assert_ptr_nonnull(strstr(out, "'cuda' is not nccl or tcp"));
    free(out);
    ck_assert_int_eq(run("", "--help", &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "HERD_PREBUILT"));
    free(out);
}
END_TEST

START_TEST(no_gpu)
{
    char *out = NULL;
    if (tu_run("nvidia-smi -L 2>/dev/null | grep -q '^GPU '", &out) == 0 ||
        access("/dev/nvidia0", F_OK) == 0) {
        free(out);
        return; /* a GPU machine: this path cannot be taken */
    }
    free(out);
    char *tmp = tu_tmpdir(), args[512];
    snprintf(args, sizeof(args), "--out %s/o", tmp);
    ck_assert_int_eq(run("", args, &out), 3);
    ck_assert_ptr_nonnull(strstr(out, "no GPU found"));
    ck_assert_ptr_nonnull(strstr(out, "--engine tcp"));
    free(out);
    free(tmp);
}
END_TEST

/* A PATH with the basic tools but no cmake, compiler or pkg-config. */
static char *bare_path(void)
{
    char *dir = tu_tmpdir(), cmd[2048], *out = NULL;
    snprintf(cmd, sizeof(cmd),
             "for t in bash dirname sed paste cat basename awk grep env "
             "mkdir rm date tee timeout; do ln -s \"$(command -v $t)\" "
             "%s/$t || exit 1; done",
             dir);
    ck_assert_int_eq(tu_run(cmd, &out), 0);
    free(out);
    return dir;
}

START_TEST(missing_build_tools)
{
    char *dir = bare_path(), env[1200], args[1200], *out = NULL;
    snprintf(env, sizeof(env), "PATH=%s", dir);
    snprintf(args, sizeof(args), "--dry-run --out %s/o", dir);
    ck_assert_int_eq(run(env, args, &out), 4);
    ck_assert_ptr_nonnull(strstr(out, "missing: cmake"));
    ck_assert_ptr_nonnull(strstr(out, "--pack DIR"));
    ck_assert_ptr_nonnull(strstr(out, "HERD_PREBUILT=DIR"));
    free(out);
    ck_assert_int_ne(run(env, "--check-deps", &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "- pkg-config"));
    free(out);
    free(dir);
}
END_TEST

START_TEST(prebuilt_without_herd)
{
    char *dir = tu_tmpdir(), env[1200], args[1200], *out = NULL;
    snprintf(env, sizeof(env), "HERD_PREBUILT=%s", dir);
    snprintf(args, sizeof(args), "--engine tcp --out %s/o", dir);
    ck_assert_int_eq(run(env, args, &out), 4);
    ck_assert_ptr_nonnull(strstr(out, "no executable cli/herd"));
    free(out);
    free(dir);
}
END_TEST

START_TEST(tcp_rehearsal)
{
    /* this build as the prebuilt directory: <build>/cli/herd */
    char build[1024];
    snprintf(build, sizeof(build), "%s", tu_herd_binary());
    char *slash = strrchr(build, '/');
    ck_assert_ptr_nonnull(slash);
    *slash = '\0';
    slash = strrchr(build, '/');
    ck_assert_ptr_nonnull(slash);
    *slash = '\0';
    char *dir = tu_tmpdir(), env[2400], args[1200], *out = NULL;
    snprintf(env, sizeof(env),
             "HERD_PREBUILT=%s HERD_GPU_MAXBYTES=64KiB HERD_GPU_DDP_STEPS=1",
             build);
    snprintf(args, sizeof(args), "--engine tcp --out %s/o", dir);
    int rc = run(env, args, &out);
    ck_assert_msg(rc == 0, "%s", out);
    const char *sum = strstr(out, "==== herd gpu-check summary");
    ck_assert_ptr_nonnull(sum);
    const char *rows[] = {"all_reduce", "all_gather", "reduce_scatter",
                          "broadcast",  "ddp replay", "verdict: OK"};
    for (int i = 0; i < 6; i++)
        ck_assert_msg(strstr(sum, rows[i]), "no '%s' in\n%s", rows[i], sum);
    /* the summary is the last thing printed */
    ck_assert_ptr_null(strstr(strstr(sum, "verdict: OK"), "gpu-check:"));
    free(out);
    free(dir);
}
END_TEST

/* nvidia-smi claims a GPU the CUDA runtime cannot use: the nccl path
 * runs end to end (version, rank choice, gpu tests, perf, replay, sim)
 * and reports every failure in the summary, which comes last. */
START_TEST(claimed_gpu_without_device)
{
    char *out = NULL;
    if (tu_run("nvidia-smi -L 2>/dev/null | grep -q '^GPU '", &out) == 0 ||
        access("/dev/nvidia0", F_OK) == 0) {
        free(out);
        return; /* a real GPU would run the whole check */
    }
    free(out);
    char *dir = tu_tmpdir(), cmd[2048], build[1024];
    snprintf(cmd, sizeof(cmd),
             "printf '#!/bin/sh\\ncase \"$*\" in *-L*) echo \"GPU 0: "
             "Fake (UUID: x)\";; *) echo Fake;; esac\\n' > "
             "%s/nvidia-smi && chmod +x %s/nvidia-smi",
             dir, dir);
    ck_assert_int_eq(tu_run(cmd, &out), 0);
    free(out);
    snprintf(cmd, sizeof(cmd), "%s/nvidia-smi -L", dir);
    ck_assert_int_eq(tu_run(cmd, &out), 0);
    ck_assert_msg(strncmp(out, "GPU 0: Fake", 11) == 0, "fake: %s", out);
    free(out);
    snprintf(build, sizeof(build), "%s", tu_herd_binary());
    for (int k = 0; k < 2; k++) /* <build>/cli/herd -> <build> */
        *strrchr(build, '/') = '\0';
    char env[3000], args[1200];
    snprintf(env, sizeof(env),
             "PATH=%s:$PATH HERD_PREBUILT=%s HERD_GPU_MAXBYTES=64KiB "
             "HERD_GPU_DDP_STEPS=1",
             dir, build);
    snprintf(args, sizeof(args), "--out %s/o", dir);
    ck_assert_int_eq(run(env, args, &out), 1);
    const char *sum = strstr(out, "==== herd gpu-check summary");
    ck_assert_ptr_nonnull(sum);
    ck_assert_ptr_nonnull(strstr(sum, "engine nccl"));
    ck_assert_ptr_nonnull(strstr(sum, "ranks 1 ("));
    ck_assert_ptr_nonnull(strstr(sum, "perf all_reduce on nccl: FAILED"));
    ck_assert_ptr_nonnull(strstr(sum, "verdict: FAILED"));
    free(out);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("unit_gpu_check");
    TCase *t = tcase_create("script");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, shellcheck_clean);
    tcase_add_test(t, usage_errors);
    tcase_add_test(t, no_gpu);
    tcase_add_test(t, missing_build_tools);
    tcase_add_test(t, prebuilt_without_herd);
    tcase_add_test(t, tcp_rehearsal);
    tcase_add_test(t, claimed_gpu_without_device);
    suite_add_tcase(s, t);
    return tu_run_suite(s);
}
