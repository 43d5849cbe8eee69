/* cli/cmd_ddp.h - helpers shared by the `herd ddp` and `herd sweep`
 * subcommand files. */
#ifndef HERD_CLI_CMD_DDP_H
#define HERD_CLI_CMD_DDP_H

#include <jansson.h>
#include <stddef.h>

#include "trace/ddp_bucket.h"
#include "trace/ddp_model.h"

/* Where model names are looked up (HERD_MODELS_DIR or <source>/models). */
const char *cli_ddp_models_dir(char *buf, size_t len);
/* Load MODEL (a path or a name); prints the error and returns 2 on
 * failure, 0 on success. */
int cli_ddp_load_model(const char *cmd, const char *arg, ddp_model_t *m);
/* {"num_buckets", "bucket_indices", "per_bucket_size_limits",
 * "bucket_bytes"} for an assignment. */
json_t *cli_ddp_buckets_json(const ddp_buckets_t *bs);

int cli_ddp_sampler_main(int argc, char **argv);
int cli_ddp_run_main(int argc, char **argv);

#endif
