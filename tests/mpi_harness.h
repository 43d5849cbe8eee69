/* tests/mpi_harness.h - helpers for the mpi engine suites.
 *
 * A suite is its own helper program: run plainly, it is a Check suite
 * whose tests start `mpirun --oversubscribe -np N <this binary> --job J`
 * on loopback and read what the ranks print; run with --job, each rank
 * runs job J on the mpi engine through herd_run and prints
 * "job J rank R ok" (or what went wrong) and exits 0 (or not). So each
 * job is a fresh MPI job (MPI starts once per process), the suite needs
 * no MPI headers, and a hung or killed job cannot take the suite down.
 * Skipped (77) when the mpi engine is not built or mpirun cannot start
 * a job. */
#ifndef HERD_TESTS_MPI_HARNESS_H
#define HERD_TESTS_MPI_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "real_tcp_harness.h"
#include "support/testutil.h"

typedef int (*mh_job_fn)(herd_comm_t *c, void *arg);

typedef struct mh_job {
    const char *name;
    mh_job_fn fn;
    double timeout_s; /* the comm's collective timeout; 0: 30 s */
} mh_job_t;

static inline int mh_engine_built(void)
{
    for (const char *const *e = herd_engine_names(); *e; e++)
        if (!strcmp(*e, "mpi"))
            return 1;
    return 0;
}

static inline const char *mh_mpiexec(void)
{
    const char *m = getenv("HERD_MPIEXEC");
    return m && *m ? m : "mpirun";
}

/* Loopback only, shared memory without ptrace-based single copy (which
 * containers often forbid), and root allowed (CI runs as root). */
#define MH_MPIRUN_FLAGS                                                        \
    "--oversubscribe --allow-run-as-root --mca btl self,vader,tcp "            \
    "--mca btl_tcp_if_include lo --mca oob_tcp_if_include lo "                 \
    "--mca btl_vader_single_copy_mechanism none"

/* Run `mpirun <flags> [extra] -np np <cmd>`; output in *out (caller
 * frees); returns mpirun's exit status. stdin from /dev/null: mpirun
 * forwards stdin, and with it closed (as under ctest) a job whose rank
 * died never ended. */
static inline int mh_mpirun(int np, const char *extra, const char *cmd,
                            char **out)
{
    char line[4096];
    snprintf(line, sizeof(line),
             "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
             "timeout 180 %s " MH_MPIRUN_FLAGS " %s -np %d %s </dev/null 2>&1",
             mh_mpiexec(), extra ? extra : "", np, cmd);
    return tu_run(line, out);
}

/* Run job `name` of this binary on np ranks. */
static inline int mh_job(int np, const char *extra, const char *name,
                         char **out)
{
    char self[1024], cmd[1200];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
        return -1;
    self[n] = '\0';
    snprintf(cmd, sizeof(cmd), "%s --job %s", self, name);
    return mh_mpirun(np, extra, cmd, out);
}

/* Occurrences of `needle` in `hay`. */
static inline int mh_count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; p && (p = strstr(p, needle)); p++)
        n++;
    return n;
}

/* Assert that job `name` passed on every one of np ranks. */
#define MH_JOB_OK(np, extra, name)                                             \
    do {                                                                       \
        char *out_ = NULL, ok_[64];                                            \
        int rc_ = mh_job(np, extra, name, &out_);                              \
        snprintf(ok_, sizeof(ok_), "job %s rank ", name);                      \
        int n_ = 0;                                                            \
        for (const char *p_ = out_; p_ && (p_ = strstr(p_, ok_)); p_++)        \
            n_ += strncmp(strchr(p_ + strlen(ok_), ' '), " ok", 3) == 0;       \
        ck_assert_msg(rc_ == 0 && n_ == (np),                                  \
                      "job %s: rc %d, %d of %d ok:\n%s", name, rc_, n_, np,    \
                      out_ ? out_ : "");                                       \
        free(out_);                                                            \
    } while (0)

/* The --job side: run the job on this rank; the process's exit code. */
static inline int mh_worker(const mh_job_t *jobs, size_t njobs,
                            const char *name)
{
    for (size_t i = 0; i < njobs; i++) {
        if (strcmp(jobs[i].name, name) != 0)
            continue;
        herd_init_t init = {
            .backend = "mpi",
            .rank = -1,
            .local_rank = -1,
            .timeout_s = jobs[i].timeout_s > 0 ? jobs[i].timeout_s : 30.0};
        /* The job learns its rank from the comm; it prints its own
         * verdict line through mh_verdict. */
        herd_run_info_t info;
        herd_status_t st =
            herd_run(&init, jobs[i].fn, (void *)jobs[i].name, &info);
        fflush(NULL);
        herd_run_info_clear(&info);
        return st == HERD_OK ? 0 : 1;
    }
    fprintf(stderr, "no job '%s'\n", name);
    return 2;
}

/* A job's last words: "job J rank R ok" or "... failed". */
static inline int mh_verdict(herd_comm_t *c, const char *job, int bad)
{
    printf("job %s rank %d %s\n", job, herd_comm_rank(c),
           bad ? "failed" : "ok");
    fflush(stdout);
    return bad;
}

/* main() of an mpi suite: the worker side with --job, else the suite. */
static inline int mh_main(int argc, char **argv, const mh_job_t *jobs,
                          size_t njobs, Suite *(*make)(void))
{
    if (argc == 3 && !strcmp(argv[1], "--job"))
        return mh_worker(jobs, njobs, argv[2]);
    if (!mh_engine_built()) {
        fprintf(stderr, "the mpi engine is not built: skipped\n");
        return 77;
    }
    /* mpirun must be able to start a process here at all (a machine
     * without one, or whose runtime cannot start, skips) */
    char *out = NULL;
    int rc = mh_mpirun(1, NULL, "true", &out);
    if (rc != 0) {
        fprintf(stderr, "%s cannot start a job here: skipped\n%s", mh_mpiexec(),
                out ? out : "");
        free(out);
        return 77;
    }
    free(out);
    return tu_run_suite(make());
}

#endif
