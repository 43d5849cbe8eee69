/* cli/cli_uncertainty.h - the model's uncertainty from a validation's
 * points (cli/cli_uncertainty.c). */
#ifndef HERD_CLI_UNCERTAINTY_H
#define HERD_CLI_UNCERTAINTY_H

#include <stddef.h>

typedef struct cli_uncertainty {
    size_t n;      /* points */
    double median; /* of |predicted - measured| / measured */
    double p95;
    char path[1024]; /* the table read */
} cli_uncertainty_t;

/* Reads `path` (a points.tsv or compare.tsv, or a directory holding
 * one). 0 and *out set, or -1 with what and where (file:line:column)
 * in err. */
int cli_uncertainty_load(const char *path, cli_uncertainty_t *out, char *err,
                         size_t len);

#endif
