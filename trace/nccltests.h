/* trace/nccltests.h - nccl-tests output as measurements: the tables that
 * all_reduce_perf, all_gather_perf, ... print (out-of-place and in-place
 * column groups, the `#  Rank` lines of -g / multi-process runs), and
 * `herd perf`'s own table in the same layout. Read into rows per table,
 * with the collective, rank count and node count the header tells; and an
 * alpha-beta fit of a table per size regime for `herd calibrate --from`. */
#ifndef HERD_TRACE_NCCLTESTS_H
#define HERD_TRACE_NCCLTESTS_H

#include <stddef.h>
#include <stdint.h>

#include <herd/herd.h>

/* Column groups of a row: nccl-tests prints out-of-place then in-place;
 * herd perf prints one group (out-of-place). */
enum { TRACE_NCCLT_OOP = 0, TRACE_NCCLT_INPLACE = 1 };

typedef struct trace_ncclt_row {
    uint64_t bytes, count;
    char type[16], redop[16]; /* as printed ("float", "sum", "none") */
    int root;                 /* -1 when printed so or absent */
    double time_us[2], algbw[2], busbw[2]; /* per column group */
    unsigned line;
} trace_ncclt_row_t;

typedef struct trace_ncclt_table {
    herd_coll_t coll;
    int have_coll;
    const char *coll_from; /* "header", "binary name", "file name",
                            * "bandwidth ratio", "option" */
    int nranks;            /* 0 when the log does not say */
    int nnodes;            /* hosts named in the `#  Rank` lines, or 0 */
    int groups;            /* 1 or 2 column groups */
    unsigned line;         /* the table's header line */
    trace_ncclt_row_t *rows;
    size_t nrows;
} trace_ncclt_table_t;

typedef struct trace_ncclt {
    trace_ncclt_table_t *tables;
    size_t ntables;
} trace_ncclt_t;

/* 1 when the text looks like an nccl-tests (or herd perf) table: a header
 * line with size, count and time columns. */
int trace_ncclt_sniff(const char *buf, size_t len);

/* Parses `len` bytes named `name` (for messages and the file-name rule).
 * Rows that do not fit the header's columns are errors with
 * name:line:column; lines of other programs (NCCL INFO, mpirun) between
 * tables are skipped. A log without any table is an error. */
herd_status_t trace_ncclt_parse(const char *buf, size_t len, const char *name,
                                trace_ncclt_t *out, char *err, size_t errlen);
herd_status_t trace_ncclt_load(const char *path, trace_ncclt_t *out,
                               char *err, size_t errlen);
void trace_ncclt_free(trace_ncclt_t *t);

/* busbw / algbw as nccl-tests defines it for `coll` on `nranks`. */
double trace_ncclt_bus_factor(herd_coll_t coll, int nranks);

/* An alpha-beta fit of one size regime: time = alpha + bus_bytes / beta,
 * where bus_bytes = bytes x bus factor (so beta is a bus bandwidth). */
typedef struct trace_ncclt_regime {
    uint64_t lo, hi;   /* sizes in bytes covered, inclusive */
    size_t n;          /* rows */
    double alpha_s;    /* seconds */
    double beta_Bps;   /* bytes per second; 0 when latency-bound only */
    double max_resid;  /* max |fit - measured| / measured */
} trace_ncclt_regime_t;

typedef struct trace_ncclt_fit {
    trace_ncclt_regime_t regime[2]; /* small sizes, large sizes */
    int nregimes;                   /* 1 when one line fits all */
    double peak_busbw_Bps;          /* largest busbw measured */
} trace_ncclt_fit_t;

/* Fits `group` of table `t` (two regimes split where the summed squared
 * relative error is least, least squares on relative error within each).
 * Needs at least 2 rows with a positive time. */
herd_status_t trace_ncclt_fit(const trace_ncclt_table_t *t, int group,
                              trace_ncclt_fit_t *out, char *err,
                              size_t errlen);

#endif
