/* tests/real_store_torch.c - a real PyTorch process on herd's store: a
 * torch.distributed.TCPStore client (is_master=False) does set, get, add,
 * compare_set, wait, check, delete_key, num_keys, multi_set/multi_get
 * and a timed-out wait against a herd store server, and meets a herd
 * client there (each waits for what the other sets; torch's client puts
 * "/" before every key); and herd's TCPStore client against torch's own
 * TCPStore server (torch hosting, herd joining); and `herd perf` under
 * real torchrun (--no-python), meeting on the agent's store; and a torch
 * gloo program under herd launch, meeting on the launcher's store. The python
 * is $HERD_TORCH_PYTHON, else /usr/bin/python3 (Debian's python3-torch,
 * 1.13, speaks TCPStore's older protocol; PyPI's 2.x the newer one: both
 * are covered); exits 77 without torch. Loopback only, bounded by
 * timeouts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "real/store/store.h"
#include "support/testutil.h"

/* $HERD_TORCH_PYTHON, else Debian's python3 (where python3-torch is),
 * else python3 on PATH. */
static const char *python(void)
{
    const char *p = getenv("HERD_TORCH_PYTHON");
    if (p && *p)
        return p;
    return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3"
                                                 : "python3";
}

static const char script[] =
    "import datetime, sys\n"
    "import torch.distributed as d\n"
    "s = d.TCPStore('127.0.0.1', int(sys.argv[1]), is_master=False,\n"
    "               timeout=datetime.timedelta(seconds=30))\n"
    "assert s.get('from_herd') == b'hello', 'herd key'\n"
    "s.set('a', b'1')\n"
    "assert s.get('a') == b'1'\n"
    "assert s.add('n', 3) == 3 and s.add('n', 4) == 7\n"
    "assert s.compare_set('c', b'', b'x') == b'x'\n"
    "assert s.compare_set('c', b'y', b'z') == b'x'\n"
    "assert s.compare_set('c', b'x', b'w') == b'w'\n"
    "if hasattr(s, 'check'):  # not bound in torch 1.x's python\n"
    "    assert s.check(['a', 'n']) and not s.check(['missing'])\n"
    "s.wait(['a', 'n'])\n"
    "assert s.delete_key('a') and not s.delete_key('a')\n"
    "if hasattr(s, 'multi_get'):  # torch >= 2\n"
    "    s.multi_set(['m1', 'm2'], [b'p', b'q'])\n"
    "    assert s.multi_get(['m1', 'm2']) == [b'p', b'q']\n"
    "else:  # torch 1.x has no multi-get/set\n"
    "    s.set('m1', b'p')\n"
    "    s.set('m2', b'q')\n"
    "s.set_timeout(datetime.timedelta(seconds=1))\n"
    "try:\n"
    "    s.wait(['never'])\n"
    "    sys.exit('wait on a missing key returned')\n"
    "except RuntimeError:\n"
    "    pass\n"
    "s.set_timeout(datetime.timedelta(seconds=30))\n"
    "s.set('from_torch', b'hi herd')\n"
    "s.wait(['late'])\n"
    "assert s.get('late') == b'from herd, later'\n"
    "print('keys', s.num_keys())\n";

START_TEST(torch_meets_herd)
{
    char *dir = tu_tmpdir(), path[512], cmd[1024];
    snprintf(path, sizeof(path), "%s/store_client.py", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(script, f);
    fclose(f);
    store_server_t *srv = NULL;
    ck_assert_int_eq(store_server_start("127.0.0.1", 0, NULL, &srv), HERD_OK);
    int port = store_server_port(srv);
    store_client_t *c = NULL;
    ck_assert_int_eq(store_client_connect("127.0.0.1", port, NULL, 10.0, &c),
                     HERD_OK);
    ck_assert_int_eq(store_set(c, "/from_herd", "hello", 5), HERD_OK);
    snprintf(cmd, sizeof(cmd), "timeout 120 '%s' '%s' %d > '%s/out' 2>&1",
             python(), path, port, dir);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    /* torch's set reaches herd's get; herd's set ends torch's wait */
    void *v = NULL;
    size_t n = 0;
    ck_assert_int_eq(store_get(c, "/from_torch", 60.0, &v, &n), HERD_OK);
    ck_assert_str_eq(v, "hi herd");
    free(v);
    ck_assert_int_eq(store_get(c, "/n", 1.0, &v, &n), HERD_OK);
    ck_assert_str_eq(v, "7");
    free(v);
    const char *late = "from herd, later";
    ck_assert_int_eq(store_set(c, "/late", late, strlen(late)), HERD_OK);
    int rc = pclose(p);
    snprintf(path, sizeof(path), "%s/out", dir);
    char *out = tu_read_file(path);
    ck_assert_msg(rc == 0, "torch client failed (%d): %s", rc, out);
    /* from_herd n c m1 m2 from_torch late */
    ck_assert_msg(strstr(out, "keys 7"), "%s", out);
    free(out);
    int64_t keys = 0;
    ck_assert_int_eq(store_num_keys(c, &keys), HERD_OK);
    ck_assert_int_eq(keys, 7);
    store_client_close(c);
    store_server_stop(srv);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    free(dir);
}
END_TEST

static const char master_script[] =
    "import datetime, sys\n"
    "import torch.distributed as d\n"
    "s = d.TCPStore('127.0.0.1', 0, is_master=True, wait_for_workers=False,\n"
    "               timeout=datetime.timedelta(seconds=60))\n"
    "s.set('from_torch', b'torch value')\n"
    "print(s.port, flush=True)\n"
    "s.wait(['herd_done'])\n"
    "assert s.get('from_herd') == b'herd value', s.get('from_herd')\n"
    "assert s.get('count') == b'12', s.get('count')\n"
    "assert not hasattr(s, 'check') or not s.check(['from_torch'])\n"
    "print('master ok', flush=True)\n";

/* herd's TCPStore client against torch's own TCPStore server, as a herd
 * program under real torchrun meets the agent's store. */
START_TEST(herd_client_on_torch_store)
{
    char *dir = tu_tmpdir(), path[512], cmd[1024], line[64] = "";
    snprintf(path, sizeof(path), "%s/master.py", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(master_script, f);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "timeout 120 '%s' '%s' 2>'%s/err'", python(),
             path, dir);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(fgets(line, sizeof(line), p));
    int port = atoi(line);
    ck_assert_int_gt(port, 0);
    store_client_t *c = NULL;
    ck_assert_int_eq(store_client_connect_tcpstore("127.0.0.1", port, 30.0, &c),
                     HERD_OK);
    void *v = NULL;
    size_t n = 0;
    ck_assert_int_eq(store_get(c, "from_torch", 10.0, &v, &n), HERD_OK);
    ck_assert_str_eq(v, "torch value");
    free(v);
    int64_t x = 0;
    ck_assert_int_eq(store_add(c, "count", 5, &x), HERD_OK);
    ck_assert_int_eq(store_add(c, "count", 7, &x), HERD_OK);
    ck_assert_int_eq(x, 12);
    ck_assert_int_eq(store_compare_set(c, "cas", "", 0, "one", 3, &v, &n),
                     HERD_OK);
    ck_assert_str_eq(v, "one");
    free(v);
    ck_assert_int_eq(store_compare_set(c, "cas", "two", 3, "three", 5, &v, &n),
                     HERD_OK);
    ck_assert_str_eq(v, "one");
    free(v);
    const char *keys[] = {"from_torch", "count", "absent"};
    int all = 0;
    ck_assert_int_eq(store_check(c, keys, 2, &all), HERD_OK);
    ck_assert_int_eq(all, 1);
    ck_assert_int_eq(store_wait(c, keys, 2, 5.0), HERD_OK);
    /* a timed-out wait: torch >= 2's server answers the cancel; with
     * torch 1.x (no cancel) that connection is spent, so another one */
    store_client_t *w = NULL;
    ck_assert_int_eq(store_client_connect_tcpstore("127.0.0.1", port, 30.0, &w),
                     HERD_OK);
    ck_assert_int_eq(store_wait(w, keys, 3, 0.5), HERD_ERR_TIMEOUT);
    store_client_close(w);
    int64_t nk = 0;
    ck_assert_int_eq(store_num_keys(c, &nk), HERD_OK);
    ck_assert_int_ge(nk, 3);
    int del = 0;
    ck_assert_int_eq(store_delete(c, "from_torch", &del), HERD_OK);
    ck_assert_int_eq(del, 1);
    ck_assert_int_eq(store_set(c, "from_herd", "herd value", 10), HERD_OK);
    ck_assert_int_eq(store_set(c, "herd_done", "1", 1), HERD_OK);
    ck_assert_ptr_nonnull(fgets(line, sizeof(line), p));
    ck_assert_str_eq(line, "master ok\n");
    store_client_close(c);
    int rc = pclose(p);
    snprintf(path, sizeof(path), "%s/err", dir);
    char *err = tu_read_file(path);
    ck_assert_msg(rc == 0, "torch master failed (%d): %s", rc, err);
    free(err);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    free(dir);
}
END_TEST

/* A herd program under real torchrun: its workers rendezvous through the
 * agent's TCPStore on MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE), where
 * rank 0 used to fail hosting a store of its own on that port. */
START_TEST(herd_under_torchrun)
{
    char cmd[1024], *out = NULL;
    /* --redirects 1 --tee 1: torch 1.13's torchrun cannot parse its own
     * default "0" under Python 3.11 (Std.from_str finds no member for
     * 0 and start_processes fails); 1 works in every version */
    snprintf(cmd, sizeof(cmd),
             "timeout 120 '%s' -m torch.distributed.run --standalone "
             "--no_python --nproc_per_node 3 --redirects 1 --tee 1 '%s' perf "
             "--engine tcp -b 8 "
             "-e 1K -f 16 -n 2 -w 1 -c 1 2>&1",
             python(), tu_herd_binary());
    int rc = tu_run(cmd, &out);
    ck_assert_msg(rc == 0, "exit %d:\n%s", rc, out);
    ck_assert_msg(strstr(out, "# Out of bounds values : 0 OK"), "%s", out);
    free(out);
}
END_TEST

/* And the other way round: a PyTorch program (gloo, env://) under herd
 * launch, its ranks meeting on the launcher's store through TCPStore. */
START_TEST(torch_under_herd_launch)
{
    char *dir = tu_tmpdir(), path[512], cmd[1024], *out = NULL;
    snprintf(path, sizeof(path), "%s/allreduce.py", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("import os, torch, torch.distributed as d\n"
          "d.init_process_group('gloo')\n"
          "t = torch.ones(1) * (d.get_rank() + 1)\n"
          "d.all_reduce(t)\n"
          "assert t.item() == 6, t\n"
          "d.barrier()\n"
          "os.write(1, b'allreduce ok %d\\n' % d.get_rank())\n"
          "d.destroy_process_group()\n",
          f);
    fclose(f);
    snprintf(cmd, sizeof(cmd),
             "timeout 120 '%s' launch --standalone --quiet --nproc-per-node 3 "
             "-- '%s' '%s' 2>&1",
             tu_herd_binary(), python(), path);
    int rc = tu_run(cmd, &out);
    ck_assert_msg(rc == 0, "exit %d:\n%s", rc, out);
    for (int r = 0; r < 3; r++) {
        char want[32];
        snprintf(want, sizeof(want), "allreduce ok %d", r);
        ck_assert_msg(strstr(out, want), "%s", out);
    }
    free(out);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    free(dir);
}
END_TEST

static Suite *torch_suite(void)
{
    Suite *s = suite_create("real_store_torch");
    TCase *tc = tcase_create("torch");
    tcase_set_timeout(tc, 150);
    tcase_add_test(tc, torch_meets_herd);
    tcase_add_test(tc, herd_client_on_torch_store);
    tcase_add_test(tc, herd_under_torchrun);
    tcase_add_test(tc, torch_under_herd_launch);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd),
             "'%s' -c 'import sys, torch.distributed as d; "
             "sys.exit(not d.is_available())' >/dev/null 2>&1",
             python());
    if (system(cmd) != 0) {
        fprintf(stderr,
                "real_store_torch: no torch.distributed in %s (Debian: "
                "python3-torch; or set HERD_TORCH_PYTHON); skipped\n",
                python());
        return 77;
    }
    snprintf(cmd, sizeof(cmd),
             "'%s' -c 'import torch; print(\"real_store_torch: torch\", "
             "torch.__version__)' >&2",
             python());
    if (system(cmd) != 0)
        return 1;
    return tu_run_suite(torch_suite());
}
