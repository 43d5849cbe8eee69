/* cli/cmd_validate.h - the pieces of `herd validate`: running herd itself as
 * a child (for the simulator, the testbed and the real engine), and the
 * report that sets predicted against measured per collective, algorithm
 * and size (or per bucket for DDP traces). */
#ifndef HERD_CLI_VALIDATE_H
#define HERD_CLI_VALIDATE_H

#include <stdio.h>

#include <herd/herd.h>

#include "trace/scenario.h"

#define V_MAX_SETS 32
#define V_MAX_WL 8

/* Options and derived state of one validation. */
typedef struct vopts {
    const char *scenario, *out;
    const char *sets[V_MAX_SETS];
    int nsets;
    int hosts, nproc, calibrate, keep;
    double rate_bps, timeout_s;
    char colls[256];
    char cal_bytes[32]; /* calibrate -e */
    char timeout_str[32];
    char self[1024];
    /* derived */
    int world, testbed_made;
    char cal_sets[4][96];
    int ncal;
} vopts_t;

/* Bring up (or reuse) the testbed for o->world hosts: 0, 77 when the
 * machine cannot host it, 1 on failure. */
int validate_setup_testbed(vopts_t *o, const trace_scenario_t *sc);
/* Fill argv with the prefix that runs a command on the real side
 * (`herd testbed run --slowdown ... --` or `herd launch ... --`) followed
 * by this herd binary; returns the number of words. */
int validate_real_argv(const vopts_t *o, const trace_scenario_t *sc,
                       char **argv, char *slow, size_t slowlen);
/* Everything after set-up: calibrate, workloads, runs, report. */
int validate_steps(vopts_t *o, const trace_scenario_t *sc);

/* Run this herd binary with argv (argv[0] is the subcommand), output
 * appended to `log_path`; returns the exit code (or -1). */
int validate_run_self(char *const argv[], const char *log_path);

typedef struct validate_row {
    char name[32];   /* collective */
    char algo[16];
    unsigned long long bytes;
    char label[64];
    size_t n;        /* matched records */
    double pred_us, meas_us; /* medians */
    double err;      /* (pred - meas) / meas */
} validate_row_t;

typedef struct validate_rows {
    validate_row_t *rows;
    size_t n, cap;
} validate_rows_t;

/* Group the matched collective records of one workload (timed ops only:
 * label "warmup" is left out) into rows and append them. e2e gets the
 * predicted and measured end-to-end spans and step times (seconds; step
 * time 0 without "step" marks). */
herd_status_t validate_collect(const char *pred_json, const char *meas_dir,
                               int world_size, validate_rows_t *rows,
                               double e2e[4], char *err, size_t errlen);

/* Markdown report; returns the median and p95 of |err| over rows. */
void validate_write_report(FILE *f, const char *scenario,
                           const validate_rows_t *rows, const char *setup,
                           double *median_out, double *p95_out);

#endif
