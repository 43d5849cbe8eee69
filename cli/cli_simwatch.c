/* cli/cli_simwatch.c - long simulations seen and stopped from the command
 * line. A progress line on stderr (events, simulated time, the share of
 * the posted collectives' schedule steps done and an estimate of the wall
 * time left for them), refreshed by the simulator's progress callback; and
 * SIGINT setting the simulator's stop flag, so that a run of minutes ends
 * with the partial report of sim/diag.c (where every rank is, which
 * collective is in progress) and what the command printed so far, instead
 * of nothing. A second SIGINT kills as usual. */
#include "cli/cli_simwatch.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop_flag;
static struct sigaction old_int;
static int armed, shown, tty;

static void on_sigint(int sig)
{
    if (stop_flag) { /* the second one: as if nothing caught it */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    stop_flag = 1;
}

static void show(const herd_sim_progress_t *p, void *arg)
{
    (void)arg;
    double left = 0;
    if (p->steps_done && p->steps_total > p->steps_done)
        left = p->wall_s / (double)p->steps_done *
               (double)(p->steps_total - p->steps_done);
    double pct = p->steps_total
                     ? 100.0 * (double)p->steps_done / (double)p->steps_total
                     : 0.0;
    fprintf(stderr,
            "%sherd: simulating: %.1f M events, t=%.6f s, %d of %d ranks "
            "done, %.0f%% of the posted collectives (about %.0f s left "
            "for them)%s",
            tty ? "\r" : "", (double)p->events / 1e6, (double)p->now_ns / 1e9,
            p->ranks_done, p->ranks, pct, left, tty ? "\033[K" : "\n");
    shown = 1;
}

static int progress_wanted(void)
{
    const char *e = getenv("HERD_PROGRESS");
    if (e && *e)
        return strcmp(e, "0") != 0;
    return isatty(STDERR_FILENO);
}

void cli_simwatch_arm(herd_sim_opts_t *o, int progress)
{
    stop_flag = 0;
    shown = 0;
    tty = isatty(STDERR_FILENO);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    armed = sigaction(SIGINT, &sa, &old_int) == 0;
    o->stop = armed ? &stop_flag : NULL;
    if (progress && progress_wanted()) {
        o->progress_cb = show;
        o->progress_arg = NULL;
    }
}

int cli_simwatch_done(herd_sim_opts_t *o)
{
    if (shown && tty)
        fprintf(stderr, "\r\033[K");
    if (armed)
        sigaction(SIGINT, &old_int, NULL);
    armed = 0;
    o->stop = NULL;
    o->progress_cb = NULL;
    return stop_flag != 0;
}
