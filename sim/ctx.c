/* sim/ctx.c - rank contexts: ucontext with an mmap'd stack (below a guard
 * page while the kernel's mapping budget allows, else carved from shared
 * mappings, their lowest bytes checked), and the AddressSanitizer fiber
 * annotations that let ASan follow the switches between the scheduler and the
 * ranks.
 *
 * swapcontext saves and restores the signal mask, a system call on each
 * switch, and a DDP run switches millions of times: a context is entered
 * once with setcontext, after which switches are _setjmp/_longjmp pairs
 * (no signal mask). Under AddressSanitizer every switch stays a
 * swapcontext with the fiber annotations. */
#undef _FORTIFY_SOURCE /* longjmp between stacks is the point here */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
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

/* The lowest bytes of every stack, which no frame uses: nothing writes
 * them, so their page is never faulted in, and a rank that wrote them
 * ran past its stack. */
#define CTX_LOW 64

#ifdef SIM_ASAN
/* The scheduler's context while a rank runs (one world per thread). */
static _Thread_local ucontext_t ctx_sched_uc;
#else
/* The context a rank is first entered from; filled by sim_ctx_create's
 * getcontext, completed by makecontext at the rank's first start. */
static _Thread_local ucontext_t ctx_start_uc;
#endif

/* makecontext passes ints: the context's address travels as two halves. */
static void ctx_trampoline(unsigned lo, unsigned hi)
{
    uintptr_t p = ((uintptr_t)hi << 32) | (uintptr_t)lo;
    sim_ctx_t *c = (sim_ctx_t *)p;
    c->fn(c->arg);
    abort(); /* entry functions end with sim_ctx_exit */
}

/* Points `uc`, filled by getcontext, at c's stack and entry. */
static void ctx_make(sim_ctx_t *c, ucontext_t *uc)
{
    uc->uc_stack.ss_sp = (char *)c->stack_lo + CTX_LOW;
    uc->uc_stack.ss_size = c->stack_len - CTX_LOW;
    uc->uc_link = NULL;
    uintptr_t p = (uintptr_t)c;
    makecontext(uc, (void (*)(void))ctx_trampoline, 2,
                (unsigned)(p & 0xffffffffu), (unsigned)(p >> 32));
}

/* Stacks per shared mapping in unguarded mode. */
#define CTX_SLAB_STACKS 4096

/* Mappings a world may use for guarded stacks: half of vm.max_map_count,
 * the rest left to malloc, libraries and the rest of the process. */
static size_t ctx_map_budget(void)
{
    long max = 65530;
    FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
    if (f) {
        if (fscanf(f, "%ld", &max) != 1 || max < 1024)
            max = 65530;
        fclose(f);
    }
    const char *env = getenv("HERD_SIM_GUARD_LIMIT"); /* tests: force mode */
    if (env && *env)
        return (size_t)strtoull(env, NULL, 10) * 2;
    return (size_t)max / 2;
}

void sim_stack_pool_init(sim_stack_pool_t *p, size_t stack_bytes, size_t nranks)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t len = (stack_bytes + page - 1) / page * page;
    if (len < 4 * page)
        len = 4 * page;
    memset(p, 0, sizeof(*p));
    p->stack_len = len;
    p->guarded = 2 * nranks <= ctx_map_budget();
}

void sim_stack_pool_fini(sim_stack_pool_t *p)
{
    for (size_t i = 0; i < p->nslabs; i++)
        munmap(p->slabs[i], p->slab_stacks * p->stack_len);
    free(p->slabs);
    p->slabs = NULL;
    p->nslabs = p->slab_cap = 0;
}

/* A stack from the current shared mapping, or a new one. */
static void *ctx_pool_take(sim_stack_pool_t *p)
{
    if (p->nslabs == 0 || p->used == p->slab_stacks) {
        if (p->nslabs == p->slab_cap) {
            size_t cap = p->slab_cap ? 2 * p->slab_cap : 16;
            void **g = realloc(p->slabs, cap * sizeof(*g));
            if (!g)
                return NULL;
            p->slabs = g;
            p->slab_cap = cap;
        }
        p->slab_stacks = CTX_SLAB_STACKS;
        void *m =
            mmap(NULL, p->slab_stacks * p->stack_len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            return NULL;
        p->slabs[p->nslabs++] = m;
        p->used = 0;
    }
    return (char *)p->slabs[p->nslabs - 1] + p->stack_len * p->used++;
}

/* A stack with its own mapping below a guard page. */
static herd_status_t ctx_map_guarded(sim_ctx_t *c, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *m = mmap(NULL, len + page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return HERD_ERR_NO_MEMORY;
    if (mprotect(m, page, PROT_NONE) != 0) {
        munmap(m, len + page);
        return HERD_ERR_NO_MEMORY;
    }
    c->map = m;
    c->map_len = len + page;
    c->stack_lo = (char *)m + page;
    return HERD_OK;
}

herd_status_t sim_ctx_create(sim_ctx_t *c, sim_stack_pool_t *pool,
                             sim_ctx_entry_fn fn, void *arg)
{
    size_t len = pool->stack_len;
    memset(c, 0, sizeof(*c));
    if (pool->guarded) {
        herd_status_t st = ctx_map_guarded(c, len);
        if (st != HERD_OK)
            return st;
    } else if (!(c->stack_lo = ctx_pool_take(pool))) {
        return HERD_ERR_NO_MEMORY;
    }
    c->stack_len = len;
    c->fn = fn;
    c->arg = arg;
#ifdef SIM_ASAN
    c->uc = malloc(sizeof(*c->uc));
    if (!c->uc) {
        sim_ctx_destroy(c);
        return HERD_ERR_NO_MEMORY;
    }
    if (getcontext(c->uc) != 0) {
        sim_ctx_destroy(c);
        return HERD_ERR_INTERNAL;
    }
    ctx_make(c, c->uc);
#else
    if (getcontext(&ctx_start_uc) != 0) {
        sim_ctx_destroy(c);
        return HERD_ERR_INTERNAL;
    }
#endif
    return HERD_OK;
}

int sim_ctx_overflowed(const sim_ctx_t *c)
{
    /* a stack with its own mapping sits above a guard page, which faults
     * at the overflow itself: only pooled stacks need the check */
    if (!c->stack_lo || c->map)
        return 0;
    const uint64_t *low = c->stack_lo;
    uint64_t any = 0;
    for (size_t i = 0; i < CTX_LOW / sizeof(*low); i++)
        any |= low[i];
    return any != 0;
}

void sim_ctx_destroy(sim_ctx_t *c)
{
    if (c->map)
        munmap(c->map, c->map_len); /* pooled stacks go with their pool */
    c->map = NULL;
    free(c->uc);
    c->uc = NULL;
}

#ifdef SIM_ASAN
void sim_ctx_resume(sim_ctx_t *sched, sim_ctx_t *rank)
{
    __sanitizer_start_switch_fiber(&sched->asan_fake, rank->stack_lo,
                                   rank->stack_len);
    swapcontext(&ctx_sched_uc, rank->uc);
    __sanitizer_finish_switch_fiber(sched->asan_fake, NULL, NULL);
}

void sim_ctx_yield(sim_ctx_t *rank, sim_ctx_t *sched)
{
    __sanitizer_start_switch_fiber(&rank->asan_fake, sched->stack_lo,
                                   sched->stack_len);
    swapcontext(rank->uc, &ctx_sched_uc);
    __sanitizer_finish_switch_fiber(rank->asan_fake, NULL, NULL);
}
#else
void sim_ctx_resume(sim_ctx_t *sched, sim_ctx_t *rank)
{
    if (_setjmp(sched->jb) != 0)
        return; /* the rank switched back */
    if (!rank->started) {
        rank->started = 1;
        ctx_make(rank, &ctx_start_uc);
        setcontext(&ctx_start_uc);
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
    setcontext(&ctx_sched_uc);
#else
    _longjmp(sched->jb, 1);
#endif
    abort();
}
