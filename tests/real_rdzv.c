/* tests/real_rdzv.c - rendezvous from herd_init_t and the environment:
 * env:// (torchrun's variables), Slurm's and Open MPI's, tcp://, file://,
 * an external store with a token, the key prefix, and the errors that say
 * what is missing. Ranks are forked children; loopback only. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "real/store/store.h"
#include "support/testutil.h"

static const char *const rdzv_vars[] = {"RANK",
                                        "WORLD_SIZE",
                                        "LOCAL_RANK",
                                        "LOCAL_WORLD_SIZE",
                                        "MASTER_ADDR",
                                        "MASTER_PORT",
                                        "SLURM_PROCID",
                                        "SLURM_NTASKS",
                                        "SLURM_LOCALID",
                                        "SLURM_NTASKS_PER_NODE",
                                        "SLURM_TASKS_PER_NODE",
                                        "SLURM_STEP_NODELIST",
                                        "SLURM_JOB_NODELIST",
                                        "SLURM_NODELIST",
                                        "OMPI_COMM_WORLD_RANK",
                                        "OMPI_COMM_WORLD_SIZE",
                                        "OMPI_COMM_WORLD_LOCAL_RANK",
                                        "OMPI_COMM_WORLD_LOCAL_SIZE",
                                        "HERD_STORE_EXTERNAL",
                                        "HERD_STORE_TOKEN",
                                        "HERD_STORE_PREFIX",
                                        "HERD_STORE_TIMEOUT",
                                        NULL};

static void clear_env(void)
{
    for (const char *const *v = rdzv_vars; *v; v++)
        unsetenv(*v);
}

/* Set "NAME=VALUE" entries, '@' in a value standing for the rank. */
static void set_env(const char *const *env, int rank)
{
    for (; env && *env; env++) {
        char name[64], val[256];
        const char *eq = strchr(*env, '=');
        snprintf(name, sizeof(name), "%.*s", (int)(eq - *env), *env);
        size_t n = 0;
        for (const char *p = eq + 1; *p && n + 12 < sizeof(val); p++)
            if (*p == '@')
                n += (size_t)snprintf(val + n, sizeof(val) - n, "%d", rank);
            else
                val[n++] = *p;
        val[n] = '\0';
        setenv(name, val, 1);
    }
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t l = sizeof(a);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    getsockname(fd, (struct sockaddr *)&a, &l);
    close(fd);
    return ntohs(a.sin_port);
}

typedef struct rdzv_case {
    int world;
    const char *init_method;
    int explicit_ranks; /* rank/world_size in herd_init_t, not env */
    const char *const *env;
    int want_local_world; /* 0: do not check */
    int want_server;      /* rank 0 hosts: 1, nobody: 0 */
} rdzv_case_t;

/* One rank: rendezvous, check identity, count arrivals, meet the others. */
static int rank_main(const rdzv_case_t *tc, int rank)
{
    clear_env();
    set_env(tc->env, rank);
    herd_init_t init = {.backend = "tcp",
                        .init_method = tc->init_method,
                        .local_rank = -1,
                        .timeout_s = 10};
    if (tc->explicit_ranks)
        init.rank = rank, init.world_size = tc->world;
    store_rdzv_t r;
    char err[256], key[32];
    if (store_rdzv_open(&init, &r, err, sizeof(err)) != HERD_OK) {
        fprintf(stderr, "rank %d: %s\n", rank, err);
        return 20;
    }
    if (r.rank != rank || r.world_size != tc->world || r.local_rank != rank)
        return 21;
    if (tc->want_local_world && r.local_world_size != tc->want_local_world)
        return 22;
    if ((r.server != NULL) != (rank == 0 && tc->want_server))
        return 23;
    int64_t v = 0;
    snprintf(key, sizeof(key), "r%d", rank);
    if (store_add(r.client, "n", 1, &v) != HERD_OK ||
        store_set(r.client, key, "1", 1) != HERD_OK)
        return 24;
    for (int i = 0; i < tc->world; i++) {
        snprintf(key, sizeof(key), "r%d", i);
        const char *k = key;
        if (store_wait(r.client, &k, 1, 10.0) != HERD_OK)
            return 25;
    }
    store_rdzv_close(&r);
    return 0;
}

static void run_ranks(const rdzv_case_t *tc)
{
    pid_t pids[8];
    ck_assert_int_le(tc->world, 8);
    for (int r = 0; r < tc->world; r++) {
        pids[r] = fork();
        ck_assert_int_ge(pids[r], 0);
        if (pids[r] == 0)
            _exit(rank_main(tc, r));
    }
    for (int r = 0; r < tc->world; r++) {
        int status = 0;
        ck_assert_int_eq(waitpid(pids[r], &status, 0), pids[r]);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "rank %d exited with status %d", r, status);
    }
}

START_TEST(test_env_torchrun)
{
    char port[32];
    snprintf(port, sizeof(port), "MASTER_PORT=%d", free_port());
    const char *env[] = {"RANK=@",
                         "WORLD_SIZE=3",
                         "LOCAL_RANK=@",
                         "LOCAL_WORLD_SIZE=3",
                         "MASTER_ADDR=127.0.0.1",
                         port,
                         NULL};
    rdzv_case_t tc = {.world = 3,
                      .init_method = "env://",
                      .env = env,
                      .want_local_world = 3,
                      .want_server = 1};
    run_ranks(&tc);
    tc.init_method = NULL; /* env:// is the default */
    snprintf(port, sizeof(port), "MASTER_PORT=%d", free_port());
    run_ranks(&tc);
}
END_TEST

START_TEST(test_env_slurm)
{
    char port[32];
    snprintf(port, sizeof(port), "MASTER_PORT=%d", free_port());
    /* no MASTER_ADDR: the first node of the step's node list */
    const char *env[] = {"SLURM_PROCID=@",
                         "SLURM_NTASKS=3",
                         "SLURM_LOCALID=@",
                         "SLURM_NTASKS_PER_NODE=3",
                         "SLURM_STEP_NODELIST=localhost,gpu[01-04]",
                         port,
                         NULL};
    rdzv_case_t tc = {
        .world = 3, .env = env, .want_local_world = 3, .want_server = 1};
    run_ranks(&tc);
    snprintf(port, sizeof(port), "MASTER_PORT=%d", free_port());
    const char *env2[] = {"SLURM_PROCID=@",
                          "SLURM_NTASKS=2",
                          "SLURM_LOCALID=@",
                          "SLURM_TASKS_PER_NODE=2(x1)",
                          "SLURM_JOB_NODELIST=127.0.0.[1-4,9]",
                          port,
                          NULL};
    rdzv_case_t tc2 = {
        .world = 2, .env = env2, .want_local_world = 2, .want_server = 1};
    run_ranks(&tc2);
}
END_TEST

START_TEST(test_env_openmpi)
{
    char port[32];
    snprintf(port, sizeof(port), "MASTER_PORT=%d", free_port());
    const char *env[] = {"OMPI_COMM_WORLD_RANK=@",
                         "OMPI_COMM_WORLD_SIZE=2",
                         "OMPI_COMM_WORLD_LOCAL_RANK=@",
                         "OMPI_COMM_WORLD_LOCAL_SIZE=2",
                         "MASTER_ADDR=localhost",
                         port,
                         NULL};
    rdzv_case_t tc = {
        .world = 2, .env = env, .want_local_world = 2, .want_server = 1};
    run_ranks(&tc);
}
END_TEST

START_TEST(test_tcp_explicit_ranks)
{
    char method[64];
    snprintf(method, sizeof(method), "tcp://127.0.0.1:%d", free_port());
    rdzv_case_t tc = {.world = 4,
                      .init_method = method,
                      .explicit_ranks = 1,
                      .want_local_world = 4,
                      .want_server = 1};
    run_ranks(&tc);
}
END_TEST

START_TEST(test_file)
{
    char *dir = tu_tmpdir(), method[600];
    snprintf(method, sizeof(method), "file://%s/rdzv", dir);
    const char *env[] = {"RANK=@", "WORLD_SIZE=3", NULL};
    rdzv_case_t tc = {
        .world = 3, .init_method = method, .env = env, .want_server = 0};
    run_ranks(&tc);
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    free(dir);
}
END_TEST

START_TEST(test_external_store_token_prefix)
{
    store_server_t *srv = NULL;
    ck_assert_int_eq(store_server_start("127.0.0.1", 0, "tok", &srv), HERD_OK);
    char port[32];
    snprintf(port, sizeof(port), "MASTER_PORT=%d", store_server_port(srv));
    const char *env[] = {"RANK=@",
                         "WORLD_SIZE=3",
                         "MASTER_ADDR=127.0.0.1",
                         port,
                         "HERD_STORE_EXTERNAL=1",
                         "HERD_STORE_TOKEN=tok",
                         "HERD_STORE_PREFIX=job/0/",
                         NULL};
    rdzv_case_t tc = {.world = 3, .env = env, .want_server = 0};
    run_ranks(&tc);
    store_client_t *c = NULL;
    ck_assert_int_eq(store_client_connect("127.0.0.1", store_server_port(srv),
                                          "tok", 5.0, &c),
                     HERD_OK);
    void *v = NULL;
    size_t n = 0;
    ck_assert_int_eq(store_get(c, "job/0/n", 1.0, &v, &n), HERD_OK);
    ck_assert_str_eq(v, "3");
    free(v);
    const char *k = "n";
    int all = 1;
    ck_assert_int_eq(store_check(c, &k, 1, &all), HERD_OK);
    ck_assert_int_eq(all, 0);
    store_client_close(c);
    store_server_stop(srv);
}
END_TEST

/* store_rdzv_open in this process must fail with `want` in the message. */
static void expect_error(const char *method, const char *const *env,
                         herd_status_t want_st, const char *want)
{
    clear_env();
    set_env(env, 0);
    herd_init_t init = {.backend = "tcp",
                        .init_method = method,
                        .local_rank = -1,
                        .timeout_s = 0.3};
    store_rdzv_t r;
    memset(&r, 0x5a, sizeof(r));
    char err[512] = "";
    ck_assert_int_eq(store_rdzv_open(&init, &r, err, sizeof(err)), want_st);
    ck_assert_msg(strstr(err, want) != NULL, "got '%s', want '%s'", err, want);
    ck_assert_int_eq(r.rank, 0x5a5a5a5a); /* untouched on error */
    clear_env();
}

START_TEST(test_errors)
{
    expect_error("env://", NULL, HERD_ERR_INVALID_ARG,
                 "env:// needs RANK and WORLD_SIZE (or SLURM_PROCID/"
                 "SLURM_NTASKS, or OMPI_COMM_WORLD_RANK/SIZE");
    const char *only_rank[] = {"RANK=1", NULL};
    expect_error(NULL, only_rank, HERD_ERR_INVALID_ARG,
                 "RANK is set but WORLD_SIZE is not");
    const char *bad_rank[] = {"RANK=one", "WORLD_SIZE=2", NULL};
    expect_error(NULL, bad_rank, HERD_ERR_INVALID_ARG,
                 "RANK='one' is not an integer");
    const char *big_rank[] = {"RANK=5", "WORLD_SIZE=2", NULL};
    expect_error(NULL, big_rank, HERD_ERR_INVALID_ARG,
                 "rank 5 is out of range for world size 2");
    const char *no_addr[] = {"RANK=0", "WORLD_SIZE=2", "MASTER_PORT=1", NULL};
    expect_error(NULL, no_addr, HERD_ERR_INVALID_ARG,
                 "env:// needs MASTER_ADDR");
    const char *no_port[] = {"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1",
                             NULL};
    expect_error(NULL, no_port, HERD_ERR_INVALID_ARG,
                 "env:// needs MASTER_PORT");
    const char *bad_port[] = {"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1",
                              "MASTER_PORT=99999", NULL};
    expect_error(NULL, bad_port, HERD_ERR_INVALID_ARG,
                 "MASTER_PORT: port '99999' is not in 1..65535");
    const char *ok[] = {"RANK=1", "WORLD_SIZE=2", NULL};
    expect_error("udp://x:1", ok, HERD_ERR_INVALID_ARG,
                 "init_method 'udp://x:1': expected env://, tcp://host:port");
    expect_error("tcp://hostonly", ok, HERD_ERR_INVALID_ARG,
                 "expected tcp://host:port");
    expect_error("tcp://127.0.0.1:x", ok, HERD_ERR_INVALID_ARG,
                 "port 'x' is not in 1..65535");
    expect_error("tcp://127.0.0.1:1", NULL, HERD_ERR_INVALID_ARG,
                 "tcp:// needs RANK and WORLD_SIZE");
    /* rank 1 with nobody serving: gives up at the timeout and says where */
    const char *quick[] = {"RANK=1", "WORLD_SIZE=2", "HERD_STORE_TIMEOUT=0.3",
                           NULL};
    expect_error("tcp://127.0.0.1:1", quick, HERD_ERR_TIMEOUT,
                 "rank 1 cannot reach the store at 127.0.0.1:1");
    expect_error("file:///nonexistent-dir/x/y", ok, HERD_ERR_NOT_FOUND,
                 "file store '/nonexistent-dir/x/y'");
}
END_TEST

static Suite *rdzv_suite(void)
{
    Suite *s = suite_create("real_rdzv");
    TCase *tc = tcase_create("rdzv");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_env_torchrun);
    tcase_add_test(tc, test_env_slurm);
    tcase_add_test(tc, test_env_openmpi);
    tcase_add_test(tc, test_tcp_explicit_ranks);
    tcase_add_test(tc, test_file);
    tcase_add_test(tc, test_external_store_token_prefix);
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(rdzv_suite());
}
