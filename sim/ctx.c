/* sim/ctx.c - rank contexts: ucontext with an mmap'd stack below a guard
 * page, and the AddressSanitizer fiber annotations that let ASan follow
 * the switches between the scheduler and the ranks.
 *
 * swapcontext saves and restores the signal mask, a system call on each
 * switch, and a DDP run switches millions of times: a context is entered
 * once with setcontext, after which switches are _setjmp/_longjmp pairs
 * (no signal mask). Under AddressSanitizer every switch stays a
 * swapcontext with the fiber annotations. */
#undef _FORTIFY_SOURCE /* longjmp between stacks is the point here */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sim/sim.h"

#if defined(__SANITIZE_ADDRESS__)
#define SIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SIM_ASAN 1
#endif
#endif

#ifdef SIM_ASAN
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom,
                                    size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save,
                                     const void **bottom_old, size_t *size_old);
#endif

/* 256 KiB of address space per rank: only touched pages cost memory, and
 * user programs (trace replayer, DDP model) may keep a few KiB of locals.
 * Sanitizers need several times more stack. */
size_t sim_ctx_default_stack(void)
{
#ifdef SIM_ASAN
    return (size_t)1 << 20;
#else
    return (size_t)256 << 10;
#endif
}

typedef struct ctx_start {
    sim_ctx_entry_fn fn;
    void *arg;
} ctx_start_t;

/* makecontext passes ints: the start record travels as two halves. */
static void ctx_trampoline(unsigned lo, unsigned hi)
{
    uintptr_t p = ((uintptr_t)hi << 32) | (uintptr_t)lo;
    sim_ctx_t *c = (sim_ctx_t *)p;
    ctx_start_t *s = (ctx_start_t *)c->stack_lo;
    s->fn(s->arg);
    abort(); /* entry functions end with sim_ctx_exit */
}

herd_status_t sim_ctx_create(sim_ctx_t *c, size_t stack_bytes,
                             sim_ctx_t *ret_to, sim_ctx_entry_fn fn, void *arg)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t len = (stack_bytes + page - 1) / page * page;
    if (len < 4 * page)
        len = 4 * page;
    void *m = mmap(NULL, len + page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return HERD_ERR_NO_MEMORY;
    if (mprotect(m, page, PROT_NONE) != 0) {
        munmap(m, len + page);
        return HERD_ERR_NO_MEMORY;
    }
    memset(c, 0, sizeof(*c));
    c->map = m;
    c->map_len = len + page;
    c->stack_lo = (char *)m + page;
    c->stack_len = len;
    /* The start record lives at the bottom of the stack, far from the
     * frames that grow down from the top. */
    ctx_start_t *s = (ctx_start_t *)c->stack_lo;
    s->fn = fn;
    s->arg = arg;
    if (getcontext(&c->uc) != 0) {
        sim_ctx_destroy(c);
        return HERD_ERR_INTERNAL;
    }
    c->uc.uc_stack.ss_sp = (char *)c->stack_lo + 64;
    c->uc.uc_stack.ss_size = len - 64;
    c->uc.uc_link = &ret_to->uc;
    uintptr_t p = (uintptr_t)c;
    makecontext(&c->uc, (void (*)(void))ctx_trampoline, 2,
                (unsigned)(p & 0xffffffffu), (unsigned)(p >> 32));
    return HERD_OK;
}

void sim_ctx_destroy(sim_ctx_t *c)
{
    if (c->map)
        munmap(c->map, c->map_len);
    c->map = NULL;
}

#ifdef SIM_ASAN
void sim_ctx_resume(sim_ctx_t *sched, sim_ctx_t *rank)
{
    __sanitizer_start_switch_fiber(&sched->asan_fake, rank->stack_lo,
                                   rank->stack_len);
    swapcontext(&sched->uc, &rank->uc);
    __sanitizer_finish_switch_fiber(sched->asan_fake, NULL, NULL);
}

void sim_ctx_yield(sim_ctx_t *rank, sim_ctx_t *sched)
{
    __sanitizer_start_switch_fiber(&rank->asan_fake, sched->stack_lo,
                                   sched->stack_len);
    swapcontext(&rank->uc, &sched->uc);
    __sanitizer_finish_switch_fiber(rank->asan_fake, NULL, NULL);
}
#else
void sim_ctx_resume(sim_ctx_t *sched, sim_ctx_t *rank)
{
    if (_setjmp(sched->jb) != 0)
        return; /* the rank switched back */
    if (!rank->started) {
        rank->started = 1;
        setcontext(&rank->uc);
    }
    _longjmp(rank->jb, 1);
}

void sim_ctx_yield(sim_ctx_t *rank, sim_ctx_t *sched)
{
    if (_setjmp(rank->jb) == 0)
        _longjmp(sched->jb, 1);
}
#endif

void sim_ctx_started(sim_ctx_t *sched)
{
#ifdef SIM_ASAN
    const void *lo = NULL;
    size_t len = 0;
    __sanitizer_finish_switch_fiber(NULL, &lo, &len);
    sched->stack_lo = (void *)lo;
    sched->stack_len = len;
#else
    (void)sched;
#endif
}

void sim_ctx_exit(sim_ctx_t *rank, sim_ctx_t *sched)
{
#ifdef SIM_ASAN
    /* NULL: this fiber's fake stack is destroyed. */
    __sanitizer_start_switch_fiber(NULL, sched->stack_lo, sched->stack_len);
#else
    (void)rank;
#endif
#ifdef SIM_ASAN
    setcontext(&sched->uc);
#else
    _longjmp(sched->jb, 1);
#endif
    abort();
}
