/* trace/plot.h - run the gnuplot scripts of plots/ (fork/exec, arguments
 * passed as ARG1.. with `gnuplot -c`, never through a shell), or a script
 * that stands alone in an output folder (trace/plot_wl.h). Each script
 * writes PREFIX.png (pngcairo) and PREFIX.svg. */
#ifndef HERD_TRACE_PLOT_H
#define HERD_TRACE_PLOT_H

#include <stddef.h>

#include <herd/status.h>

/* Run plots_dir/script with the given arguments. HERD_ERR_NOT_FOUND with
 * a message saying how to install gnuplot when it is missing;
 * HERD_ERR_IO when gnuplot fails (its exit status in err). */
herd_status_t trace_plot_run(const char *plots_dir, const char *script,
                             const char *const *args, int nargs, char *err,
                             size_t errlen);

/* Run `gnuplot NAME.gp` in folder dir (a script that stands alone, as
 * trace/plot_wl.h writes them); errors as trace_plot_run. */
herd_status_t trace_plot_run_gp(const char *dir, const char *name, char *err,
                                size_t errlen);

/* 1 when a gnuplot binary is on PATH. */
int trace_plot_available(void);

#endif
