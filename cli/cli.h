/* cli/cli.h - the herd command: one entry point per subcommand, each in
 * its own cli/cmd_<name>.c, plus small helpers they share. */
#ifndef HERD_CLI_H
#define HERD_CLI_H

#include <stddef.h>
#include <stdint.h>

#include <herd/herd.h>

typedef int (*cli_cmd_fn)(int argc, char **argv);

typedef struct cli_cmd {
    const char *name;
    cli_cmd_fn fn;
    const char *summary;
} cli_cmd_t;

/* Subcommands (argv[0] is the subcommand name). Exit codes: 0 ok, 1 the
 * run failed (or predicted a hang), 2 bad usage or input. */
int cli_schedule_main(int argc, char **argv);
int cli_perf_main(int argc, char **argv);
int cli_sim_main(int argc, char **argv);
int cli_check_main(int argc, char **argv);
int cli_replay_main(int argc, char **argv);
int cli_trace_main(int argc, char **argv);
int cli_compare_main(int argc, char **argv);
/* herd compare on nccl-tests style tables (cmd_compare_perf.c). */
int cli_compare_is_perf_table(const char *path);
int cli_compare_is_steps(const char *path);
int cli_compare_steps(const char *const *files, int nfiles, const char *dir);
/* herd validate: the step records of a workload's prediction (pred_dir's
 * steps.tsv) against its measurement (meas_dir's steps-rank<r>.tsv):
 * every step into tsv_path, each collective, algorithm and size's widest
 * gap into md_path. 0 ok, else 1 and why in err. */
int cli_steps_validate(const char *pred_dir, const char *meas_dir, int world,
                       const char *tsv_path, const char *md_path, char *err,
                       size_t errlen);
int cli_compare_perf(const char *pred_path, const char *meas_path,
                     int in_place);
/* herd calibrate --from nccl-tests logs (cmd_calibrate_from.c). */
int cli_calibrate_from_main(int argc, char **argv);
int cli_store_main(int argc, char **argv);
int cli_launch_main(int argc, char **argv);
int cli_diagnose_main(int argc, char **argv);
int cli_ddp_main(int argc, char **argv);
int cli_fsdp_main(int argc, char **argv);
int cli_parallel_main(int argc, char **argv);
int cli_sweep_main(int argc, char **argv);
int cli_testbed_main(int argc, char **argv);
int cli_calibrate_main(int argc, char **argv);
int cli_validate_main(int argc, char **argv);
int cli_import_main(int argc, char **argv);

/* Print "herd <cmd>: <message>" to stderr and return 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* 1 if argv has -h/--help before any "--" (and prints `usage` to stdout).
 * Every subcommand and sub-subcommand calls it before it acts. */
int cli_wants_help(int argc, char **argv, const char *usage);

/* Parse sizes "64", "1K", "4MiB", "1GB" (bytes) and counts, as
 * trace_parse_bytes_flag does (no hex; "1mb" refused as ambiguous). */
int cli_parse_bytes(const char *s, uint64_t *out);
int cli_parse_int(const char *s, long lo, long hi, long *out);
int cli_parse_double(const char *s, double *out);
/* A link rate in bits per second: "400Mbit", "1Gbit", "400Mbps", "1e9". */
int cli_parse_rate(const char *s, double *bits_per_s);
/* A testbed's --cc: a congestion control's name as the kernel spells them
 * ("cubic", "bbr", "reno", ...: 1..15 of [a-z0-9_]) or "host"; 0, or -1. */
int cli_testbed_cc(const char *s, char *out, size_t len);
/* A testbed's --slow-start-after-idle: "on" or "off" as
 * TESTBED_IDLE_RESTART_ON / _OFF (real/testbed/testbed.h); 0, or -1. */
int cli_idle_restart(const char *s, int *out);

/* The engine named by --engine (an engine or an alias: gloo is tcp) as
 * the engine's own name in *engine; an unknown one prints the engines that
 * exist and returns 2. */
int cli_engine_resolve(const char *cmd, const char *name, const char **engine);

/* The file formats herd reads, and foreign ones it recognises to say what
 * a wrong file is (cli_format.c). */
typedef enum cli_format {
    CLI_FMT_UNREADABLE,
    CLI_FMT_NOT_JSON,
    CLI_FMT_GZIP,
    CLI_FMT_SCENARIO, /* by name: .yaml / .yml */
    CLI_FMT_TRACE,
    CLI_FMT_TIMELINE,
    CLI_FMT_MODEL,
    CLI_FMT_READY_ORDER,
    CLI_FMT_FLIGHT,
    CLI_FMT_PROFILER, /* PyTorch profiler (Kineto) trace */
    CLI_FMT_CHROME,   /* another tool's Chrome trace */
    CLI_FMT_OTHER_JSON,
    CLI_FMT_COUNT
} cli_format_t;

/* What `path` holds, from its content (YAML scenarios by extension). */
cli_format_t cli_format_sniff(const char *path);
/* "herd timeline (herd-timeline Chrome trace JSON)" and so on. */
const char *cli_format_name(cli_format_t format);
/* 0 when `path` is of format `want` (or unreadable / not JSON: the reader
 * then says where); otherwise prints "herd CMD: PATH: expected a ...,
 * found a ..." (with a hint) and returns 2. */
int cli_format_expect(const char *cmd, const char *path, cli_format_t want);

/* Directory of the gnuplot scripts (source tree or installed). */
const char *cli_plots_dir(void);

#endif
