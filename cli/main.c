/* cli/main.c - the herd command: dispatch to subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const cli_cmd_t commands[] = {
    {"schedule", cli_schedule_main, "print a collective's per-rank schedule"},
    {"perf", cli_perf_main, "nccl-tests style table (sim, tcp, nccl)"},
    {"sim", cli_sim_main, "run a scenario on the simulator"},
    {"check", cli_check_main, "validate any herd file, say its format"},
    {"replay", cli_replay_main, "replay a trace on an engine"},
    {"trace", cli_trace_main, "trace tools (rescale)"},
    {"compare", cli_compare_main, "compare predicted and measured timelines"},
    {"store", cli_store_main, "run a standalone rendezvous store"},
    {"launch", cli_launch_main, "start workers like torchrun"},
    {"diagnose", cli_diagnose_main, "analyse flight-record dumps"},
    {"ddp", cli_ddp_main, "DDP model tools (buckets)"},
    {"fsdp", cli_fsdp_main, "FSDP model: step time, memory, hangs"},
    {"parallel", cli_parallel_main, "tensor/pipeline/ZeRO parallel model"},
    {"sweep", cli_sweep_main, "sweep scenario parameters"},
    {"testbed", cli_testbed_main, "emulated cluster in network namespaces"},
    {"calibrate", cli_calibrate_main, "measure and fit link parameters"},
    {"validate", cli_validate_main, "predicted against measured report"},
    {"import", cli_import_main, "PyTorch profiler traces to herd files"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: herd <command> [options]   (herd <command> --help)\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nengines built in:");
    for (const char *const *e = herd_engine_names(); *e; e++)
        fprintf(f, " %s", *e);
    fprintf(f, "\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("herd %s\n", HERD_VERSION_STRING);
        return 0;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "herd: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
