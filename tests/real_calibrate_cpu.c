/* tests/real_calibrate_cpu.c - `herd calibrate --comm-cpu` on the tcp
 * engine (two ranks on loopback): it measures fixed work alone and beside
 * a thread's all_reduces and writes cluster.comm_cpu_slowdown (a number
 * >= 0), and those all_reduces against the same one alone as
 * cluster.compute_comm_slowdown, into the scenario it emits, which loads
 * back (also when the link is too fast to fit a bandwidth); without the
 * flag neither key is written. No timing is asserted. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support/testutil.h"
#include "trace/scenario.h"

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t l = sizeof(a);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &l), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static char *calibrate(const char *flags, const char *path)
{
    char cmd[4096], *out = NULL;
    snprintf(cmd, sizeof(cmd),
             "timeout 200 %s launch --quiet --nproc-per-node 2 --master-port "
             "%d -- %s calibrate -e 64KiB -n 1 %s -o %s 2>&1",
             tu_herd_binary(), free_port(), tu_herd_binary(), flags, path);
    int rc = tu_run(cmd, &out);
    ck_assert_msg(rc == 0, "rc %d: %s", rc, out);
    return out;
}

START_TEST(writes_the_slowdown)
{
    char *dir = tu_tmpdir(), path[1024], err[512];
    snprintf(path, sizeof(path), "%s/cal.yaml", dir);
    char *out = calibrate("--comm-cpu", path);
    ck_assert_msg(strstr(out, "# comm cpu: "), "%s", out);
    free(out);
    char *text = tu_read_file(path);
    const char *k = text ? strstr(text, "  comm_cpu_slowdown: ") : NULL;
    ck_assert_msg(k, "%s", text);
    /* the key as a scenario reads it */
    double v = -1;
    ck_assert_int_eq(sscanf(k, "  comm_cpu_slowdown: %lf", &v), 1);
    ck_assert(v >= 0);
    char line[128];
    snprintf(line, sizeof(line), "cluster: {comm_cpu_slowdown: %.3f}\n", v);
    trace_scenario_t *sc = NULL;
    ck_assert_msg(trace_scenario_load_string(line, "cal.yaml", &sc, err,
                                             sizeof(err)) == HERD_OK,
                  "%s", err);
    ck_assert_double_eq_tol(sc->sim.cluster.comm_cpu_slowdown, v, 1e-3);
    trace_scenario_destroy(sc);
    free(text);
    /* and the whole file loads (on loopback no bandwidth may be fitted:
     * then a comment says so instead of an "infGB/s" that would not) */
    ck_assert_msg(trace_scenario_load(path, &sc, err, sizeof(err)) == HERD_OK,
                  "%s", err);
    ck_assert(sc->sim.cluster.comm_cpu_slowdown >= 0);
    trace_scenario_destroy(sc);
    /* the other way round: what the work cost the all_reduces */
    text = tu_read_file(path);
    k = text ? strstr(text, "  compute_comm_slowdown: ") : NULL;
    ck_assert_msg(k, "%s", text);
    v = -1;
    ck_assert_int_eq(sscanf(k, "  compute_comm_slowdown: %lf", &v), 1);
    ck_assert(v >= 0);
    free(text);
    out = calibrate("", path);
    free(out);
    text = tu_read_file(path);
    ck_assert_ptr_null(strstr(text, "comm_cpu_slowdown"));
    ck_assert_ptr_null(strstr(text, "compute_comm_slowdown"));
    free(text);
    remove(path);
    remove(dir);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("real_calibrate_cpu");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 400);
    tcase_add_test(tc, writes_the_slowdown);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
