/* emu_runtime.cpp: the CUDA emulator's scheduler (fibers, barriers), "device" memory, and the
 * host runtime API of cuda_runtime_api.h. See tools/cuda_emu/README.md.
 *
 * Environment (read once):
 *   AMPC_EMU_STRICT=0    fidelity reports (divergent barriers, exited lanes in a shuffle mask,
 *                        host pointers passed to kernels, ...) are only logged; by default they
 *                        also fail the launch (cudaErrorLaunchFailure), so the op raises
 *   AMPC_EMU_LOG=path    where reports go (appended), default stderr
 *   AMPC_EMU_GUARD=0     leave device memory readable by host code (default: PROT_NONE outside
 *                        emulated device work, so a host dereference of a device pointer is caught)
 *   AMPC_EMU_MEM_GB=n    the fake device's capacity (default 8)
 *   AMPC_EMU_DEVICES=n   number of emulated GPUs (default 1; all share one memory arena)
 *   AMPC_EMU_STATS=1     print launch counts and time at exit */
#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cuda_runtime.h"

#if defined(__SANITIZE_ADDRESS__)
#define EMU_ASAN 1
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#include <ucontext.h>
#endif

/* ================================================================ configuration and reports */

namespace {
struct config {
    bool strict = true, guard = true, stats = false;
    size_t capacity = (size_t)8 << 30;
    int devices = 1;
    FILE *log = stderr;
    config() {
        const char *v;
        if ((v = getenv("AMPC_EMU_STRICT"))) strict = atoi(v) != 0;
        if ((v = getenv("AMPC_EMU_GUARD"))) guard = atoi(v) != 0;
        if ((v = getenv("AMPC_EMU_STATS"))) stats = atoi(v) != 0;
        if ((v = getenv("AMPC_EMU_MEM_GB"))) capacity = (size_t)(atof(v) * (double)(1 << 30));
        if ((v = getenv("AMPC_EMU_DEVICES"))) devices = atoi(v) < 1 ? 1 : atoi(v) > 8 ? 8 : atoi(v);
        if ((v = getenv("AMPC_EMU_LOG")) && *v) {
            FILE *f = fopen(v, "a");
            if (f) log = f, setvbuf(f, nullptr, _IOLBF, 0);
        }
    }
};
config &cfg() {
    static config c;
    return c;
}

std::recursive_mutex big_lock; /* one emulated GPU at a time: every API call and launch */
thread_local cudaError_t last_error = cudaSuccess;
thread_local int current_device = 0;
cudaError_t pending_error = cudaSuccess; /* a failed launch, reported at the next sync */

cudaError_t fail(cudaError_t e) {
    last_error = e;
    return e;
}

std::set<std::string> reported;
const emu::launch_info *running = nullptr; /* the launch being executed */
bool launch_failed = false;
int64_t n_launches = 0, n_blocks = 0, n_threads = 0, n_reports = 0;
double launch_seconds = 0;

double now_seconds() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void vreport(const char *file, int line, const char *fmt, va_list ap) {
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    char key[1400];
    snprintf(key, sizeof key, "%s:%d:%s:%s", file ? file : "?", line, running ? running->name : "-", msg);
    n_reports++;
    if (running && cfg().strict) launch_failed = true;
    if (!reported.insert(key).second) return;
    if (running)
        fprintf(cfg().log, "ampc-emu: %s:%d: %s [kernel %s launched at %s:%d, grid (%u,%u,%u) block (%u,%u,%u)]\n",
                file ? file : "?", line, msg, running->name, running->file, running->line, running->grid.x,
                running->grid.y, running->grid.z, running->block.x, running->block.y, running->block.z);
    else
        fprintf(cfg().log, "ampc-emu: %s:%d: %s\n", file ? file : "?", line, msg);
    fflush(cfg().log);
}

void host_report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void host_report(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport("host", 0, fmt, ap);
    va_end(ap);
}
} // namespace

/* ================================================================ device memory */

namespace {
const size_t ARENA_RESERVE = (size_t)64 << 30;
const size_t GRAIN = 512; /* cudaMalloc alignment (256) and then some */
char *arena = nullptr;
std::map<size_t, size_t> free_ranges;  /* offset -> bytes */
std::map<size_t, size_t> allocations;  /* offset -> bytes (rounded) */
std::map<size_t, size_t> requested;    /* offset -> bytes asked for */
std::map<uintptr_t, size_t> pinned;    /* cudaHostAlloc blocks */
size_t allocated_bytes = 0;
int access_depth = 0;
bool arena_open = false;
int64_t host_faults = 0;

void set_arena_open(bool open) {
    if (!cfg().guard || open == arena_open) return;
    if (mprotect(arena, ARENA_RESERVE, open ? PROT_READ | PROT_WRITE : PROT_NONE) != 0) {
        perror("ampc-emu: mprotect");
        abort();
    }
    arena_open = open;
}

void segv_handler(int sig, siginfo_t *si, void *uc);
struct sigaction old_segv;

void arena_init() {
    if (arena) return;
    void *p = mmap(nullptr, ARENA_RESERVE, cfg().guard ? PROT_NONE : PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        perror("ampc-emu: reserving the device arena");
        abort();
    }
    arena = (char *)p;
    arena_open = !cfg().guard;
    free_ranges[0] = ARENA_RESERVE;
    if (cfg().guard) {
        void *frames[4];
        backtrace(frames, 4); /* loads libgcc now, not inside the signal handler */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = segv_handler;
        sa.sa_flags = SA_SIGINFO | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGSEGV, &sa, &old_segv);
    }
}

/* A host access to the closed arena: log it with a backtrace, open the arena so the access
 * completes, and make the next CUDA call fail (cudaErrorIllegalAddress). */
void segv_handler(int sig, siginfo_t *si, void *uc) {
    char *addr = (char *)si->si_addr;
    if (arena && addr >= arena && addr < arena + ARENA_RESERVE && !arena_open) {
        host_faults++;
        char msg[200];
        int n = snprintf(msg, sizeof msg,
                         "ampc-emu: HOST CODE ACCESSED DEVICE MEMORY at %p (a host dereference of a device "
                         "pointer; on a GPU this is a crash). Backtrace:\n", (void *)addr);
        (void)!write(fileno(cfg().log), msg, (size_t)n);
        void *frames[48];
        int k = backtrace(frames, 48);
        backtrace_symbols_fd(frames, k, fileno(cfg().log));
        mprotect(arena, ARENA_RESERVE, PROT_READ | PROT_WRITE);
        arena_open = true;
        pending_error = cudaErrorIllegalAddress;
        return;
    }
    /* not ours: hand over to the previous handler (Python's faulthandler) or the default */
    sigaction(SIGSEGV, &old_segv, nullptr);
    if (old_segv.sa_flags & SA_SIGINFO) {
        if (old_segv.sa_sigaction) old_segv.sa_sigaction(sig, si, uc);
    } else if (old_segv.sa_handler != SIG_DFL && old_segv.sa_handler != SIG_IGN) {
        old_segv.sa_handler(sig);
    }
}

void *arena_alloc(size_t n) {
    arena_init();
    size_t need = (n + GRAIN - 1) / GRAIN * GRAIN;
    if (need == 0) need = GRAIN;
    if (allocated_bytes + need > cfg().capacity) return nullptr;
    for (auto it = free_ranges.begin(); it != free_ranges.end(); ++it) {
        if (it->second < need) continue;
        size_t off = it->first, len = it->second;
        free_ranges.erase(it);
        if (len > need) free_ranges[off + need] = len - need;
        allocations[off] = need;
        requested[off] = n;
        allocated_bytes += need;
        return arena + off;
    }
    return nullptr;
}

bool arena_free(void *p) {
    if (!arena || (char *)p < arena || (char *)p >= arena + ARENA_RESERVE) return false;
    size_t off = (size_t)((char *)p - arena);
    auto it = allocations.find(off);
    if (it == allocations.end()) return false;
    size_t len = it->second;
    allocations.erase(it);
    requested.erase(off);
    allocated_bytes -= len;
    if (len >= (1u << 20)) { /* give big blocks' pages back */
        const size_t page = 4096;
        size_t a = (off + page - 1) / page * page, b = (off + len) / page * page;
        if (b > a) madvise(arena + a, b - a, MADV_DONTNEED);
    }
    auto next = free_ranges.lower_bound(off);
    if (next != free_ranges.end() && next->first == off + len) {
        len += next->second;
        free_ranges.erase(next);
    }
    auto prev = free_ranges.lower_bound(off);
    if (prev != free_ranges.begin()) {
        --prev;
        if (prev->first + prev->second == off) {
            prev->second += len;
            return true;
        }
    }
    free_ranges[off] = len;
    return true;
}

/* [p, p + n) inside one live allocation (n == 0: p inside or one past the end). */
bool in_device(const void *p, size_t n) {
    if (!arena || (const char *)p < arena || (const char *)p >= arena + ARENA_RESERVE) return false;
    size_t off = (size_t)((const char *)p - arena);
    auto it = allocations.upper_bound(off);
    if (it == allocations.begin()) return false;
    --it;
    size_t end = it->first + requested[it->first];
    return off + n <= end && (n > 0 ? off < end : off <= end);
}
bool in_arena(const void *p) { return arena && (const char *)p >= arena && (const char *)p < arena + ARENA_RESERVE; }
bool in_pinned(const void *p, size_t n) {
    auto it = pinned.upper_bound((uintptr_t)p);
    if (it == pinned.begin()) return false;
    --it;
    return (uintptr_t)p + n <= it->first + it->second;
}
} // namespace

extern "C" int ampc_emu_is_device_ptr(const void *p, size_t n) {
    std::lock_guard<std::recursive_mutex> lock(big_lock);
    return in_device(p, n) ? 1 : 0;
}

namespace emu {
void device_access(bool on) {
    if (on) {
        big_lock.lock();
        if (access_depth++ == 0) set_arena_open(true);
    } else {
        if (--access_depth == 0) set_arena_open(false);
        big_lock.unlock();
    }
}
} // namespace emu

namespace {
struct access_scope {
    access_scope() { emu::device_access(true); }
    ~access_scope() { emu::device_access(false); }
};
} // namespace

/* ================================================================ fibers */

#if !defined(EMU_ASAN)
/* Saves the callee-saved registers, MXCSR and the x87 control word on the current stack, stores
 * the stack pointer in *save and continues on the stack `to` (as saved by this function or built
 * by fiber_init). No signal mask work, unlike swapcontext: a switch costs a few nanoseconds. */
extern "C" void ampc_emu_switch(void **save, void *to);
asm(R"(
    .text
    .globl ampc_emu_switch
    .hidden ampc_emu_switch
    .type ampc_emu_switch,@function
ampc_emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size ampc_emu_switch, .-ampc_emu_switch
)");
#endif

namespace emu {
fiber *cur;
uint3 block_idx;
dim3 block_dim, grid_dim;
unsigned char warp_slots[32][2][32][16];
unsigned char warp_parity[32];
} // namespace emu

namespace {
#if defined(EMU_ASAN)
const size_t STACK = (size_t)1 << 20;
#else
const size_t STACK = (size_t)256 << 10;
#endif
const size_t GUARD = 4096;
char *stacks = nullptr; /* 1024 stacks, each below a guard page */
void *sched_sp;
std::vector<emu::fiber> fibers(1024);
void (*body_fn)(void *);
void *body_ctx;
int nthreads, n_done, n_block_wait;
int warp_n[32], warp_done[32], warp_wait[32];
unsigned warp_live[32]; /* lanes not exited */

char *stack_top(int t) { return stacks + (size_t)t * (STACK + GUARD) + GUARD + STACK; }

#if defined(EMU_ASAN)
ucontext_t sched_ctx, fiber_ctx[1024];
const void *sched_bottom;
size_t sched_size;
#endif

void to_scheduler() {
    emu::fiber *f = emu::cur;
#if defined(EMU_ASAN)
    void *fs = nullptr;
    __sanitizer_start_switch_fiber(f->state == emu::DONE ? nullptr : &fs, sched_bottom, sched_size);
    swapcontext(&fiber_ctx[f->linear], &sched_ctx);
    __sanitizer_finish_switch_fiber(fs, nullptr, nullptr);
#else
    ampc_emu_switch(&f->sp, sched_sp);
#endif
}

[[noreturn]] void fiber_main() {
#if defined(EMU_ASAN)
    __sanitizer_finish_switch_fiber(nullptr, &sched_bottom, &sched_size);
#endif
    body_fn(body_ctx);
    emu::fiber *f = emu::cur;
    f->state = emu::DONE;
    n_done++;
    warp_done[f->warp]++;
    warp_live[f->warp] &= ~(1u << f->lane);
    to_scheduler();
    abort(); /* never resumed */
}

void fiber_init(int t) {
#if defined(EMU_ASAN)
    getcontext(&fiber_ctx[t]);
    fiber_ctx[t].uc_stack.ss_sp = stack_top(t) - STACK;
    fiber_ctx[t].uc_stack.ss_size = STACK;
    fiber_ctx[t].uc_link = nullptr;
    makecontext(&fiber_ctx[t], (void (*)())fiber_main, 0);
#else
    uint64_t *sp = (uint64_t *)stack_top(t);
    *--sp = 0;                        /* fiber_main's (absent) return address */
    *--sp = (uint64_t)(uintptr_t)&fiber_main; /* where ampc_emu_switch's ret goes */
    for (int r = 0; r < 6; r++) *--sp = 0; /* rbp rbx r12 r13 r14 r15 */
    *--sp = (uint64_t)0x1f80u | ((uint64_t)0x037fu << 32); /* MXCSR, x87 control word */
    fibers[t].sp = sp;
#endif
}

void run_fiber(int t) {
    emu::cur = &fibers[t];
#if defined(EMU_ASAN)
    void *fs = nullptr;
    __sanitizer_start_switch_fiber(&fs, stack_top(t) - STACK, STACK);
    swapcontext(&sched_ctx, &fiber_ctx[t]);
    __sanitizer_finish_switch_fiber(fs, nullptr, nullptr);
#else
    ampc_emu_switch(&sched_sp, fibers[t].sp);
#endif
}

void stacks_init() {
    if (stacks) return;
    size_t total = 1024 * (STACK + GUARD);
    void *p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        perror("ampc-emu: fiber stacks");
        abort();
    }
    stacks = (char *)p;
    for (int t = 0; t < 1024; t++) mprotect(stacks + (size_t)t * (STACK + GUARD), GUARD, PROT_NONE);
}

std::string states_summary() {
    std::map<std::string, int> where;
    for (int t = 0; t < nthreads; t++) {
        const emu::fiber &f = fibers[t];
        char b[300];
        if (f.state == emu::DONE) snprintf(b, sizeof b, "exited");
        else snprintf(b, sizeof b, "%s at %s:%d", f.state == emu::WAIT_BLOCK ? "__syncthreads" : "warp collective",
                      f.site_file, f.site_line);
        where[b]++;
    }
    std::string s;
    for (auto &w : where) s += "; " + std::to_string(w.second) + " thread(s) " + w.first;
    return s;
}

/* After a round in which every fiber ran until it blocked or exited: release the barriers that
 * are complete. False: nothing could be released (a deadlock). */
bool release_barriers() {
    bool released = false;
    const int n_warps = (nthreads + 31) / 32;
    for (int w = 0; w < n_warps; w++) {
        if (!warp_wait[w]) continue;
        unsigned waiting = 0, want = 0;
        for (int l = 0; l < warp_n[w]; l++) {
            emu::fiber &f = fibers[w * 32 + l];
            if (f.state == emu::WAIT_WARP) waiting |= 1u << l, want |= f.mask;
        }
        if ((want & warp_live[w]) & ~waiting) continue; /* a named live lane has not arrived yet */
        const emu::fiber *first = nullptr;
        for (int l = 0; l < warp_n[w]; l++) {
            emu::fiber &f = fibers[w * 32 + l];
            if (f.state != emu::WAIT_WARP) continue;
            if (!first) first = &f;
            if (!(f.mask >> l & 1u))
                emu::report(f.site_file, f.site_line, "warp collective: lane %d is not in its own mask 0x%08x", l,
                            f.mask);
            unsigned absent = f.mask & ~waiting;
            if (absent) {
                unsigned beyond = warp_n[w] >= 32 ? 0u : ~0u << warp_n[w];
                emu::report(f.site_file, f.site_line,
                            "warp collective with mask 0x%08x names lanes that %s (waiting 0x%08x): undefined on a "
                            "GPU",
                            f.mask, (absent & beyond) ? "do not exist (partial warp)" : "have exited", waiting);
            }
            if (f.site_line != first->site_line || f.site_file != first->site_file)
                emu::report(f.site_file, f.site_line, "warp collective: lanes of one warp meet at different sites "
                            "(%s:%d and here): divergent collectives", first->site_file, first->site_line);
            f.state = emu::RUN;
        }
        warp_wait[w] = 0;
        emu::warp_parity[w] ^= 1;
        released = true;
    }
    if (released) return true;
    if (n_block_wait > 0 && n_block_wait == nthreads - n_done) {
        const emu::fiber *first = nullptr;
        for (int t = 0; t < nthreads; t++) {
            emu::fiber &f = fibers[t];
            if (f.state != emu::WAIT_BLOCK) continue;
            if (!first) first = &f;
            else if (f.site_line != first->site_line || f.site_file != first->site_file)
                emu::report(f.site_file, f.site_line,
                            "__syncthreads reached at different sites (%s:%d and here): divergent barrier",
                            first->site_file, first->site_line);
            f.state = emu::RUN;
        }
        n_block_wait = 0;
        return true;
    }
    return false;
}

/* Runs one block; false after a deadlock. */
bool run_block() {
    for (int t = 0; t < nthreads; t++) {
        emu::fiber &f = fibers[t];
        f.state = emu::RUN;
        f.linear = t;
        f.warp = t >> 5;
        f.lane = t & 31;
        f.tid = uint3{(unsigned)(t % emu::block_dim.x), (unsigned)(t / emu::block_dim.x % emu::block_dim.y),
                      (unsigned)(t / (emu::block_dim.x * emu::block_dim.y))};
        fiber_init(t);
    }
    n_done = n_block_wait = 0;
    const int n_warps = (nthreads + 31) / 32;
    for (int w = 0; w < n_warps; w++) {
        warp_n[w] = nthreads - 32 * w < 32 ? nthreads - 32 * w : 32;
        warp_done[w] = warp_wait[w] = 0;
        warp_live[w] = warp_n[w] == 32 ? 0xffffffffu : (1u << warp_n[w]) - 1u;
        emu::warp_parity[w] = 0;
    }
    for (;;) {
        for (int t = 0; t < nthreads; t++)
            if (fibers[t].state == emu::RUN) run_fiber(t);
        if (n_done == nthreads) return true;
        if (!release_barriers()) {
            std::string s = states_summary();
            emu::report(running->file, running->line, "deadlock in block (%u,%u,%u)%s", emu::block_idx.x,
                        emu::block_idx.y, emu::block_idx.z, s.c_str());
            launch_failed = true;
            return false;
        }
    }
}
} // namespace

namespace emu {
void block_barrier(int line, const char *file) {
    fiber *f = cur;
    f->state = WAIT_BLOCK;
    f->site_line = line;
    f->site_file = file;
    n_block_wait++;
    to_scheduler();
}

void warp_barrier(unsigned mask, int line, const char *file) {
    fiber *f = cur;
    f->state = WAIT_WARP;
    f->mask = mask;
    f->site_line = line;
    f->site_file = file;
    warp_wait[f->warp]++;
    to_scheduler();
}

void report(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(file, line, fmt, ap);
    va_end(ap);
}

void check_bounds(long max_threads, const char *file, int line) {
    long n = (long)block_dim.x * block_dim.y * block_dim.z;
    if (n > max_threads) {
        report(file, line, "launched with %ld threads per block, above its __launch_bounds__(%ld): the launch "
               "fails on a GPU", n, max_threads);
        launch_failed = true;
    }
}

void check_pointer(const void *p, int index) {
    if (!p || in_device(p, 0) || in_pinned(p, 0)) return;
    if (in_arena(p)) report(running->file, running->line, "kernel argument %d (%p) points into freed device memory",
                            index, p);
    else report(running->file, running->line, "kernel argument %d (%p) is a host pointer", index, p);
}

void device_trap(const char *file, int line) {
    report(file, line, "__trap()");
    launch_failed = true;
}

bool launch_begin(const launch_info &info) {
    big_lock.lock();
    running = &info;
    launch_failed = false;
    const dim3 g = info.grid, b = info.block;
    uint64_t nt = (uint64_t)b.x * b.y * b.z;
    const char *why = nullptr;
    if (g.x == 0 || g.y == 0 || g.z == 0 || nt == 0) why = "an empty grid or block";
    else if (nt > 1024 || b.x > 1024 || b.y > 1024 || b.z > 64) why = "more than 1024 threads per block";
    else if (g.x > 2147483647u || g.y > 65535 || g.z > 65535) why = "a grid beyond the limits (y, z <= 65535)";
    else if (info.smem > 48 * 1024) why = "over 48 KiB of dynamic shared memory";
    else if (info.param_bytes > 32764) why = "over 32764 bytes of kernel parameters";
    if (why) {
        report(info.file, info.line, "invalid launch configuration: %s", why);
        last_error = cudaErrorInvalidConfiguration;
        running = nullptr;
        big_lock.unlock();
        return false;
    }
    return true; /* launch() releases the lock */
}

void launch(const launch_info &info, void (*body)(void *), void *ctx) {
    double t0 = now_seconds();
    stacks_init();
    emu::device_access(true);
    body_fn = body;
    body_ctx = ctx;
    block_dim = info.block;
    grid_dim = info.grid;
    nthreads = (int)(info.block.x * info.block.y * info.block.z);
    n_launches++;
    bool ok = true;
    for (unsigned bz = 0; bz < info.grid.z && ok; bz++)
        for (unsigned by = 0; by < info.grid.y && ok; by++)
            for (unsigned bx = 0; bx < info.grid.x && ok; bx++) {
                block_idx = uint3{bx, by, bz};
                ok = run_block();
                n_blocks++;
                n_threads += nthreads;
            }
    if (launch_failed) last_error = cudaErrorLaunchFailure;
    cur = nullptr;
    running = nullptr;
    emu::device_access(false);
    launch_seconds += now_seconds() - t0;
    big_lock.unlock(); /* taken by launch_begin */
}
} // namespace emu

namespace {
struct stats_at_exit {
    ~stats_at_exit() {
        if (cfg().stats)
            fprintf(stderr, "ampc-emu: %lld launches, %lld blocks, %lld threads, %.2f s in kernels, %lld reports, "
                    "%lld host accesses to device memory\n", (long long)n_launches, (long long)n_blocks,
                    (long long)n_threads, launch_seconds, (long long)n_reports, (long long)host_faults);
    }
} stats_printer;
} // namespace

/* ================================================================ runtime API */

namespace {
struct stream_rec {
    int device, priority;
    unsigned flags;
};
struct event_rec {
    unsigned flags;
    bool recorded;
    double time;
};
std::set<cudaStream_t> streams;
std::set<cudaEvent_t> events;

bool valid_stream(cudaStream_t s) {
    return s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread || streams.count(s);
}
cudaError_t sync_point() {
    if (pending_error != cudaSuccess) {
        cudaError_t e = pending_error;
        pending_error = cudaSuccess;
        return fail(e);
    }
    return cudaSuccess;
}
} // namespace

#define LOCK std::lock_guard<std::recursive_mutex> lock_(big_lock)

extern "C" {

cudaError_t cudaGetDeviceCount(int *count) {
    *count = cfg().devices;
    return cudaSuccess;
}
cudaError_t cudaGetDevice(int *device) {
    *device = current_device;
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
    if (device < 0 || device >= cfg().devices) return fail(cudaErrorInvalidDevice);
    current_device = device;
    return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) {
    if (device < 0 || device >= cfg().devices) return fail(cudaErrorInvalidDevice);
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "ampc CUDA emulator");
    prop->totalGlobalMem = cfg().capacity;
    prop->sharedMemPerBlock = 48 * 1024;
    prop->sharedMemPerBlockOptin = 227 * 1024;
    prop->sharedMemPerMultiprocessor = 228 * 1024;
    prop->regsPerBlock = 65536;
    prop->warpSize = 32;
    prop->maxThreadsPerBlock = 1024;
    prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024;
    prop->maxThreadsDim[2] = 64;
    prop->maxGridSize[0] = 2147483647;
    prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
    prop->major = 9;
    prop->minor = 0;
    prop->multiProcessorCount = 132;
    prop->maxThreadsPerMultiProcessor = 2048;
    prop->l2CacheSize = 50 << 20;
    prop->memoryBusWidth = 5120;
    prop->pciBusID = device;
    prop->unifiedAddressing = 1;
    return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device) {
    if (device < 0 || device >= cfg().devices) return fail(cudaErrorInvalidDevice);
    switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; break;
    case cudaDevAttrMaxBlockDimX: *value = 1024; break;
    case cudaDevAttrMaxGridDimX: *value = 2147483647; break;
    case cudaDevAttrMaxGridDimY: case cudaDevAttrMaxGridDimZ: *value = 65535; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = 48 * 1024; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = 227 * 1024; break;
    case cudaDevAttrWarpSize: *value = 32; break;
    case cudaDevAttrMultiProcessorCount: *value = 132; break;
    case cudaDevAttrComputeCapabilityMajor: *value = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
    default: return fail(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) {
    LOCK;
    return sync_point();
}
cudaError_t cudaDeviceReset(void) { return cudaSuccess; }
cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest) {
    if (least) *least = 0;
    if (greatest) *greatest = -5;
    return cudaSuccess;
}
cudaError_t cudaDeviceCanAccessPeer(int *can, int device, int peer) {
    *can = device != peer;
    return cudaSuccess;
}
cudaError_t cudaDeviceEnablePeerAccess(int, unsigned) { return cudaSuccess; }
cudaError_t cudaGetLastError(void) {
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}
cudaError_t cudaPeekAtLastError(void) { return last_error; }
cudaError_t cudaDriverGetVersion(int *v) {
    *v = CUDART_VERSION;
    return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int *v) {
    *v = CUDART_VERSION;
    return cudaSuccess;
}

const char *cudaGetErrorName(cudaError_t err) {
    switch (err) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInitializationError: return "cudaErrorInitializationError";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorLaunchOutOfResources: return "cudaErrorLaunchOutOfResources";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    default: return "cudaErrorUnknown";
    }
}
const char *cudaGetErrorString(cudaError_t err) {
    switch (err) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    case cudaErrorLaunchFailure: return "unspecified launch failure (emulator: see the ampc-emu report)";
    default: return "unknown error";
    }
}

/* ---------------------------------------------------------------- memory */

cudaError_t cudaMalloc(void **ptr, size_t nbytes) {
    LOCK;
    *ptr = nullptr;
    if (nbytes == 0) return cudaSuccess;
    void *p = arena_alloc(nbytes);
    if (!p) return fail(cudaErrorMemoryAllocation);
    *ptr = p;
    return cudaSuccess;
}
cudaError_t cudaFree(void *ptr) {
    LOCK;
    if (!ptr) return cudaSuccess;
    if (!arena_free(ptr)) {
        host_report("cudaFree(%p): not a live cudaMalloc block", ptr);
        return fail(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}
cudaError_t cudaMallocAsync(void **ptr, size_t nbytes, cudaStream_t) { return cudaMalloc(ptr, nbytes); }
cudaError_t cudaFreeAsync(void *ptr, cudaStream_t) { return cudaFree(ptr); }
cudaError_t cudaHostAlloc(void **ptr, size_t nbytes, unsigned) {
    LOCK;
    size_t n = (nbytes + 4095) / 4096 * 4096;
    void *p = aligned_alloc(4096, n ? n : 4096);
    if (!p) return fail(cudaErrorMemoryAllocation);
    pinned[(uintptr_t)p] = nbytes;
    *ptr = p;
    return cudaSuccess;
}
cudaError_t cudaMallocHost(void **ptr, size_t nbytes) { return cudaHostAlloc(ptr, nbytes, 0); }
cudaError_t cudaFreeHost(void *ptr) {
    LOCK;
    if (!ptr) return cudaSuccess;
    auto it = pinned.find((uintptr_t)ptr);
    if (it == pinned.end()) {
        host_report("cudaFreeHost(%p): not a cudaHostAlloc block", ptr);
        return fail(cudaErrorInvalidValue);
    }
    pinned.erase(it);
    free(ptr);
    return cudaSuccess;
}
cudaError_t cudaHostRegister(void *ptr, size_t nbytes, unsigned) {
    LOCK;
    pinned[(uintptr_t)ptr] = nbytes;
    return cudaSuccess;
}
cudaError_t cudaHostUnregister(void *ptr) {
    LOCK;
    pinned.erase((uintptr_t)ptr);
    return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
    LOCK;
    *total_bytes = cfg().capacity;
    *free_bytes = cfg().capacity - allocated_bytes;
    return cudaSuccess;
}
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attr, const void *ptr) {
    LOCK;
    memset(attr, 0, sizeof *attr);
    if (in_device(ptr, 0)) {
        attr->type = cudaMemoryTypeDevice;
        attr->device = current_device;
        attr->devicePointer = (void *)ptr;
    } else if (in_pinned(ptr, 0)) {
        attr->type = cudaMemoryTypeHost;
        attr->devicePointer = attr->hostPointer = (void *)ptr;
    } else {
        attr->type = cudaMemoryTypeUnregistered;
        attr->hostPointer = (void *)ptr;
    }
    return cudaSuccess;
}

static cudaError_t check_side(const void *p, size_t n, bool device, const char *what, const char *call) {
    if (device ? in_device(p, n) : !in_arena(p)) return cudaSuccess;
    if (device)
        host_report("%s: the %s [%p, +%zu) is not inside one live device allocation", call, what, p, n);
    else
        host_report("%s: the %s %p is device memory, but the copy kind says host", call, what, p);
    return fail(cudaErrorInvalidValue);
}

static cudaError_t do_memcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, cudaStream_t s,
                             const char *call) {
    LOCK;
    if (n == 0) return cudaSuccess;
    if (!valid_stream(s)) {
        host_report("%s: invalid stream %p", call, (void *)s);
        return fail(cudaErrorInvalidResourceHandle);
    }
    bool d_dev, s_dev;
    switch (kind) {
    case cudaMemcpyHostToDevice: d_dev = true, s_dev = false; break;
    case cudaMemcpyDeviceToHost: d_dev = false, s_dev = true; break;
    case cudaMemcpyDeviceToDevice: d_dev = s_dev = true; break;
    case cudaMemcpyHostToHost: d_dev = s_dev = false; break;
    case cudaMemcpyDefault: d_dev = in_arena(dst), s_dev = in_arena(src); break;
    default: return fail(cudaErrorInvalidMemcpyDirection);
    }
    cudaError_t e;
    if ((e = check_side(dst, n, d_dev, "destination", call)) || (e = check_side(src, n, s_dev, "source", call)))
        return e;
    if (s_dev && d_dev && (const char *)src < (char *)dst + n && (char *)dst < (const char *)src + n && src != dst)
        host_report("%s: overlapping device ranges (undefined for cudaMemcpy)", call);
    access_scope a;
    memmove(dst, src, n);
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind) {
    cudaError_t e = do_memcpy(dst, src, n, kind, nullptr, "cudaMemcpy");
    if (e) return e;
    LOCK;
    return sync_point();
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, cudaStream_t stream) {
    return do_memcpy(dst, src, n, kind, stream, "cudaMemcpyAsync");
}
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                              enum cudaMemcpyKind kind, cudaStream_t stream) {
    if (width > dpitch || width > spitch) return fail(cudaErrorInvalidValue);
    for (size_t r = 0; r < height; r++) {
        cudaError_t e = do_memcpy((char *)dst + r * dpitch, (const char *)src + r * spitch, width, kind, stream,
                                  "cudaMemcpy2DAsync");
        if (e) return e;
    }
    return cudaSuccess;
}
cudaError_t cudaMemcpyPeer(void *dst, int, const void *src, int, size_t n) {
    return do_memcpy(dst, src, n, cudaMemcpyDeviceToDevice, nullptr, "cudaMemcpyPeer");
}
cudaError_t cudaMemcpyPeerAsync(void *dst, int, const void *src, int, size_t n, cudaStream_t stream) {
    return do_memcpy(dst, src, n, cudaMemcpyDeviceToDevice, stream, "cudaMemcpyPeerAsync");
}
cudaError_t cudaMemsetAsync(void *p, int value, size_t n, cudaStream_t stream) {
    LOCK;
    if (n == 0) return cudaSuccess;
    if (!valid_stream(stream)) return fail(cudaErrorInvalidResourceHandle);
    if (!in_device(p, n)) {
        host_report("cudaMemset: [%p, +%zu) is not inside one live device allocation", p, n);
        return fail(cudaErrorInvalidValue);
    }
    access_scope a;
    memset(p, value, n);
    return cudaSuccess;
}
cudaError_t cudaMemset(void *p, int value, size_t n) { return cudaMemsetAsync(p, value, n, nullptr); }

/* ---------------------------------------------------------------- streams and events */

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned flags, int priority) {
    LOCK;
    stream_rec *r = new stream_rec{current_device, priority < -5 ? -5 : priority > 0 ? 0 : priority, flags};
    *s = (cudaStream_t)r;
    streams.insert(*s);
    return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) { return cudaStreamCreateWithPriority(s, flags, 0); }
cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithPriority(s, 0, 0); }
cudaError_t cudaStreamDestroy(cudaStream_t s) {
    LOCK;
    if (!streams.erase(s)) return fail(cudaErrorInvalidResourceHandle);
    delete (stream_rec *)s;
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    LOCK;
    if (!valid_stream(s)) return fail(cudaErrorInvalidResourceHandle);
    return sync_point();
}
cudaError_t cudaStreamQuery(cudaStream_t s) {
    LOCK;
    if (!valid_stream(s)) return fail(cudaErrorInvalidResourceHandle);
    return cudaSuccess;
}
cudaError_t cudaStreamGetPriority(cudaStream_t s, int *priority) {
    LOCK;
    if (!valid_stream(s)) return fail(cudaErrorInvalidResourceHandle);
    *priority = streams.count(s) ? ((stream_rec *)s)->priority : 0;
    return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned) {
    LOCK;
    if (!valid_stream(s) || !events.count(e)) return fail(cudaErrorInvalidResourceHandle);
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags) {
    LOCK;
    event_rec *r = new event_rec{flags, false, 0};
    *e = (cudaEvent_t)r;
    events.insert(*e);
    return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, 0); }
cudaError_t cudaEventDestroy(cudaEvent_t e) {
    LOCK;
    if (!events.erase(e)) return fail(cudaErrorInvalidResourceHandle);
    delete (event_rec *)e;
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    LOCK;
    if (!events.count(e) || !valid_stream(s)) return fail(cudaErrorInvalidResourceHandle);
    event_rec *r = (event_rec *)e;
    r->recorded = true;
    r->time = now_seconds();
    return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
    LOCK;
    if (!events.count(e)) return fail(cudaErrorInvalidResourceHandle);
    return sync_point();
}
cudaError_t cudaEventQuery(cudaEvent_t e) {
    LOCK;
    if (!events.count(e)) return fail(cudaErrorInvalidResourceHandle);
    return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
    LOCK;
    if (!events.count(start) || !events.count(end)) return fail(cudaErrorInvalidResourceHandle);
    event_rec *a = (event_rec *)start, *b = (event_rec *)end;
    if ((a->flags | b->flags) & cudaEventDisableTiming) return fail(cudaErrorInvalidResourceHandle);
    if (!a->recorded || !b->recorded) return fail(cudaErrorInvalidResourceHandle);
    *ms = (float)((b->time - a->time) * 1e3);
    return cudaSuccess;
}

} /* extern "C" */
