/* trace/plot_wl_int.h - helpers the workload plot writers share
 * (plot_wl.c, plot_step.c): gnuplot strings, .dat fields, files. */
#ifndef HERD_TRACE_PLOT_WL_INT_H
#define HERD_TRACE_PLOT_WL_INT_H

#include <stddef.h>
#include <stdio.h>

#include <herd/status.h>

/* s as a gnuplot string literal (single quotes; blanks for newlines). */
void plot_gp_string(FILE *f, const char *s);
/* v as a gnuplot number (NaN when not finite). */
void plot_gp_number(FILE *f, double v);
/* s as one tab-separated .dat field ("-" when empty). */
void plot_dat_field(FILE *f, const char *s);
/* Open DIR/NAME.EXT for writing; close it, reporting a write error. */
herd_status_t plot_open(const char *dir, const char *name, const char *ext,
                        FILE **out, char *err, size_t errlen);
herd_status_t plot_close(FILE *f, const char *dir, const char *name,
                         const char *ext, char *err, size_t errlen);

#endif
