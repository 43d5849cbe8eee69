/* cli/cmd_store.c - `herd store`: run a standalone rendezvous store until
 * SIGINT or SIGTERM (for HERD_STORE_EXTERNAL=1 jobs, for torch processes
 * as a TCPStore, and for tests). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "real/store/store.h"

static const char store_usage[] =
    "usage: herd store [--port P] [--host H] [--token T]\n"
    "  Run a rendezvous store server until SIGINT/SIGTERM.\n"
    "  --port P   port to listen on (default 29500; 0: any free port)\n"
    "  --host H   address to bind (default 0.0.0.0)\n"
    "  --token T  shared token clients must present (default:\n"
    "             $HERD_STORE_TOKEN; none if unset)\n"
    "  Prints 'herd store: listening on HOST:PORT' once ready.\n"
    "  Serves herd's clients and PyTorch's TCPStore clients (torch 1.x and\n"
    "  >= 2, is_master=False) on the same port; the latter only without a\n"
    "  token.\n";

typedef struct store_args {
    long port;
    const char *host, *token;
} store_args_t;

static int parse_args(int argc, char **argv, store_args_t *a)
{
    a->port = 29500;
    a->host = NULL;
    a->token = getenv("HERD_STORE_TOKEN");
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i];
        if (i + 1 >= argc)
            return cli_usage_error("store",
                                   "unknown or incomplete option "
                                   "'%s' (see --help)",
                                   opt);
        const char *val = argv[++i];
        if (!strcmp(opt, "--port")) {
            if (cli_parse_int(val, 0, 65535, &a->port) != 0)
                return cli_usage_error("store",
                                       "--port needs 0..65535, got '%s'", val);
        } else if (!strcmp(opt, "--host")) {
            a->host = val;
        } else if (!strcmp(opt, "--token")) {
            a->token = val;
        } else {
            return cli_usage_error("store", "unknown option '%s' (see --help)",
                                   opt);
        }
    }
    return 0;
}

int cli_store_main(int argc, char **argv)
{
    if (cli_wants_help(argc, argv, store_usage))
        return 0;
    store_args_t a;
    int rc = parse_args(argc, argv, &a);
    if (rc != 0)
        return rc;
    /* Block the stop signals before the server thread starts, then wait
     * for one of them here. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    store_server_t *srv = NULL;
    herd_status_t st = store_server_start(a.host, (int)a.port, a.token, &srv);
    if (st != HERD_OK) {
        fprintf(stderr, "herd store: cannot listen on %s:%ld: %s\n",
                a.host ? a.host : "0.0.0.0", a.port, herd_status_string(st));
        return 1;
    }
    printf("herd store: listening on %s:%d\n", a.host ? a.host : "0.0.0.0",
           store_server_port(srv));
    fflush(stdout);
    int sig = 0;
    sigwait(&set, &sig);
    store_server_stop(srv);
    fprintf(stderr, "herd store: stopped by signal %d\n", sig);
    return 0;
}
