/* cli/cmd_compare_steps.c - `herd compare PREDICTED_STEPS MEASURED_STEPS...`:
 * step records (HERD_STEPS_DIR) of a prediction against those of a
 * measurement, per collective, algorithm, size, rank and step: when each
 * step started and ended after the rank posted the op, medians over the
 * ops, printed and written to DIR/steps.tsv. */
#include <stdio.h>

#include "cli/cli.h"
#include "cli/cmd_sim.h"
#include "trace/steps.h"

int cli_compare_is_steps(const char *path)
{
    return trace_steps_is_file(path);
}

static int read_all(const char *const *files, int n, trace_steps_t *s)
{
    char err[1024];
    for (int i = 0; i < n; i++)
        if (trace_steps_read(files[i], s, err, sizeof(err)) != HERD_OK) {
            fprintf(stderr, "herd compare: %s\n", err);
            return 2;
        }
    return 0;
}

int cli_compare_steps(const char *const *files, int nfiles, const char *dir)
{
    trace_steps_t pred = {0}, meas = {0};
    trace_step_cmp_t c = {0};
    char tsv[4096];
    int rc = read_all(files, 1, &pred);
    if (!rc)
        rc = read_all(files + 1, nfiles - 1, &meas);
    if (!rc && trace_steps_compare(&pred, &meas, &c) != HERD_OK) {
        fprintf(stderr, "herd compare: out of memory\n");
        rc = 2;
    }
    if (!rc && c.differ)
        fprintf(stderr,
                "herd compare: %zu step(s) of the same rank, op and index "
                "differ in what they are (another algorithm or size?): left "
                "out\n",
                c.differ);
    if (!rc && c.matched == 0) {
        fprintf(stderr, "herd compare: no step matched: are these the step "
                        "records of one trace?\n");
        rc = 1;
    }
    if (!rc) {
        trace_step_cmp_print(&c, stdout, 0);
        snprintf(tsv, sizeof(tsv), "%s/steps.tsv", dir);
        FILE *f = cli_sim_mkdir("compare", dir) ? NULL : fopen(tsv, "w");
        if (f)
            trace_step_cmp_print(&c, f, 1);
        if (!f || fclose(f) != 0) {
            fprintf(stderr, "herd compare: cannot write %s\n", tsv);
            rc = 2;
        } else
            printf("wrote:\n  %s\n", tsv);
    }
    trace_step_cmp_free(&c);
    trace_steps_free(&meas);
    trace_steps_free(&pred);
    return rc;
}
