/* cli/cmd_validate.h - the pieces of `herd validate`: running herd itself as
 * a child (for the simulator, the testbed and the real engine), the real
 * PyTorch side (--torch, cmd_validate_torch.c), the sweep over link rates
 * (--rates, cmd_validate_rates.c), and the report that sets predicted
 * against measured per collective, algorithm and size (or per bucket and
 * step for DDP). */
#ifndef HERD_CLI_VALIDATE_H
#define HERD_CLI_VALIDATE_H

#include <stdio.h>

#include <herd/herd.h>

#include "trace/scenario.h"

#define V_MAX_SETS 32
#define V_MAX_WL 8
#define V_MAX_RATES 16

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
    int torch;         /* --torch: real PyTorch DDP is the measured side */
    int comm_cpu;      /* --comm-cpu: calibrate and predict with
                          cluster.compute_comm_slowdown */
    char python[1024]; /* --python (default /usr/bin/python3) */
    double rates[V_MAX_RATES]; /* --rates, bits/s */
    char rate_names[V_MAX_RATES][32];
    int nrates;
    const char *calibration; /* --calibration FILE: reuse, do not measure */
    char cc[16];      /* --cc: the testbed hosts' TCP congestion control ("":
                         the testbed's default) */
    int idle_restart; /* --slow-start-after-idle (TESTBED_IDLE_RESTART_*;
                         0: Linux's default, on) */
    const char *from; /* --from DIR: an earlier validation's measurements */
    char from_cal[1024];
    /* derived */
    int world, testbed_made;
    char cc_used[16]; /* what the testbed's hosts run */
    int idle_used;    /* and their slow start after idle (0: not known) */
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
typedef struct validate_rows validate_rows_t;

/* Everything after set-up: calibrate, workloads, runs, report. The
 * report's rows are appended to all_rows when it is not NULL. */
int validate_steps(vopts_t *o, const trace_scenario_t *sc,
                   validate_rows_t *all_rows);

/* Run this herd binary with argv (argv[0] is the subcommand), output
 * appended to `log_path`; returns the exit code (or -1). */
int validate_run_self(char *const argv[], const char *log_path);
/* Run the program argv[0] (looked up on PATH) the same way. */
int validate_run_prog(char *const argv[], const char *log_path);

/* --from DIR (cmd_validate_from.c). 0 when DIR is a directory other
 * than -o's (which must exist), else 1 with a message. */
int validate_from_apart(const vopts_t *o);
/* The earlier run's trace of workload `name` into `trace`: 0, or 1 with
 * a message when DIR has none. */
int validate_from_trace(const vopts_t *o, const char *name, char *trace,
                        size_t len);
/* Take DIR/calibration.yaml as --calibration unless one was given or
 * calibration is off; without it, predict with the scenario's links (a
 * note says so). */
void validate_from_calibration(vopts_t *o);
/* Copy DIR/<name>/measured/'s files into dir/measured: 0, or 1 with a
 * message. */
int validate_from_measured(const vopts_t *o, const char *name, const char *dir);

/* DIR/report.md's rows against the new -o/report.md's: -o/from.md, each
 * row's prediction before and now beside the measurement, and a line
 * printed. 0, or 1 (with a note) when either report is missing. */
int validate_from_compare(const vopts_t *o);

/* --torch (cmd_validate_torch.c). 0 when `o->python` imports torch, else
 * 77 with the reason printed; 2 when the scenario has no DDP workload. */
int validate_torch_probe(const vopts_t *o, const trace_scenario_t *sc);
/* Run the scenario's DDP job in real PyTorch on the real side, one rank
 * per host, into dir/measured (torch-rank<R>.json), then align its
 * records with the prediction (dir/predicted/timeline.json) and write
 * dir/measured/timeline-rank<R>.json. 0 ok, 1 failed (log says why). */
int validate_torch_measure(const vopts_t *o, const trace_scenario_t *sc,
                           const char *dir, const char *log);
/* --from with --torch: DIR's PyTorch records (dir/measured/torch-rank<R>
 * .json, copied) aligned again with this prediction. 0 ok, 1 failed. */
int validate_torch_realign(const vopts_t *o, const char *dir, const char *log);
/* Rows per step (predicted against measured step time, medians over
 * ranks), the steps aligned from the last. */
herd_status_t validate_torch_step_rows(const char *pred_json,
                                       const char *meas_dir, int world,
                                       validate_rows_t *rows, char *err,
                                       size_t errlen);
/* "PyTorch 2.15.0" from the measured timeline of rank 0 ("" if none). */
void validate_torch_version(const char *meas_dir, char *buf, size_t len);

/* --rates (cmd_validate_rates.c): validate_steps once per rate (a
 * testbed shaped to it, DIR/<rate>/), then DIR/summary.md, summary.tsv,
 * points.tsv and the plot summary.png. */
int validate_rates(vopts_t *o, const trace_scenario_t *sc);

typedef struct validate_row {
    char name[32]; /* collective ("step" for step rows) */
    char algo[16];
    unsigned long long bytes;
    char label[64];
    size_t n;                /* matched records */
    double pred_us, meas_us; /* medians */
    /* the measured durations' 10th and 90th percentiles (nearest rank):
     * how far the real side's own runs spread around its median */
    double meas_p10_us, meas_p90_us;
    double err;    /* (pred - meas) / meas */
    char rate[32]; /* --rates: the link rate of the run */
} validate_row_t;

struct validate_rows {
    validate_row_t *rows;
    size_t n, cap;
};

/* The row's prediction lies within its measured p10 .. p90: a miss of
 * the median no larger than the real side's own spread. */
int validate_row_in_spread(const validate_row_t *w);

/* Append a row (copied); HERD_ERR_NO_MEMORY. */
herd_status_t validate_rows_add(validate_rows_t *rows,
                                const validate_row_t *row);
/* Median of |err| over the rows with matches, and p95 and max. */
void validate_rows_stats(const validate_row_t *const *rows, size_t n,
                         double *median, double *p95, double *max);

/* Group the matched collective records of one workload (timed ops only:
 * label "warmup" is left out) into rows and append them. e2e gets the
 * predicted and measured end-to-end spans and step times (seconds; step
 * time 0 without "step" marks). from_step: each span starts at its
 * timeline's first "step" mark (real PyTorch's timeline starts there: the
 * DDP constructor's broadcasts before it are not in it). */
herd_status_t validate_collect(const char *pred_json, const char *meas_dir,
                               int world_size, int from_step,
                               validate_rows_t *rows, double e2e[4], char *err,
                               size_t errlen);

/* Markdown report; returns the median and p95 of |err| over rows. */
void validate_write_report(FILE *f, const char *scenario,
                           const validate_rows_t *rows, const char *setup,
                           double *median_out, double *p95_out);

#endif
