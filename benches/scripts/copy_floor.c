/*
 * The floor of a provider's Collect copy, outside the provider (BENCHMARKS.md, "Why
 * `provider_1000x16` stays at 1.6x `memcpy`"): what a loop of the same copies costs against memcpy of the same bytes.
 *
 *   cc -O2 -o /tmp/copy_floor benches/scripts/copy_floor.c && /tmp/copy_floor 1000
 *   /tmp/copy_floor 100000
 *
 * The layout is bench_map's: per instance a 48-byte definition (from an array of its own, as the
 * provider's recorded definitions are) then a 136-byte counter block (8-byte header, 16 LARGE
 * counters) read from a 256-byte padded stride of a shared file mapping, written one after the
 * other (184 bytes an instance). Each figure is the best of 30 passes, the four variants
 * alternated in each pass.
 *
 *   memcpy          memcpy of the output's bytes to a buffer half a page off (no 4K aliasing)
 *   fixed           the copies with the stride and block size known at compile time
 *   entries         as a provider must: a (slot, definition length) list, a run-time block size
 *   entries-2lines  `entries` with the counters on a 64-byte line (block header 56 bytes into
 *                   the stride, not read): two lines of every four read instead of three
 *
 * The 16-byte loads are SSE2 intrinsics here (the provider's are atomic MOVDQA in `asm!`).
 */
#include <emmintrin.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define STRIDE 256
#define DEF 48
#define BLOCK 136
#define OUT (DEF + BLOCK)

typedef struct {
    uint32_t slot, def;
} entry;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* 64 bytes of the definition (its last 16 land where the block then goes). */
static inline void copy_def(char *d, const char *p) {
    __m128i a = _mm_loadu_si128((const void *)p), b = _mm_loadu_si128((const void *)(p + 16)),
            c = _mm_loadu_si128((const void *)(p + 32)), e = _mm_loadu_si128((const void *)(p + 48));
    _mm_storeu_si128((void *)(d + 48), e);
    _mm_storeu_si128((void *)(d + 32), c);
    _mm_storeu_si128((void *)(d + 16), b);
    _mm_storeu_si128((void *)d, a);
}

__attribute__((noinline)) static void fixed(char *dst, const char *src, const char *defs, long n) {
    for (long i = 0; i < n; i++) {
        char *d = dst + i * OUT;
        const char *s = src + i * STRIDE;
        copy_def(d, defs + i * DEF);
        d += DEF;
        for (int k = 0; k < 8; k++)
            _mm_storeu_si128((void *)(d + 16 * k), _mm_load_si128((const void *)(s + 16 * k)));
        *(uint64_t *)(d + 128) = *(volatile const uint64_t *)(s + 128);
        *(uint32_t *)d = BLOCK;
    }
}

/* `skip`: bytes of the block not read (its header, 8, when the counters start a line). */
__attribute__((noinline)) static void with_entries(char *dst, const char *src, const char *defs,
                                                   const entry *e, long n, size_t stride,
                                                   size_t block, size_t lead, size_t skip) {
    const char *defs_end = defs + DEF * n - 64;
    for (long i = 0; i < n; i++) {
        size_t def = e[i].def;
        const char *s = src + e[i].slot * stride + lead + skip;
        if (def <= 64 && defs <= defs_end)
            copy_def(dst, defs);
        else
            memcpy(dst, defs, def);
        dst += def;
        defs += def;
        char *d = dst + skip;
        size_t left = block - skip;
        for (; left >= 64; left -= 64, s += 64, d += 64) {
            __m128i x0 = _mm_load_si128((const void *)s), x1 = _mm_load_si128((const void *)(s + 16)),
                    x2 = _mm_load_si128((const void *)(s + 32)), x3 = _mm_load_si128((const void *)(s + 48));
            _mm_storeu_si128((void *)d, x0);
            _mm_storeu_si128((void *)(d + 16), x1);
            _mm_storeu_si128((void *)(d + 32), x2);
            _mm_storeu_si128((void *)(d + 48), x3);
            __asm__ volatile("" : "+r"(s));
        }
        for (; left >= 16; left -= 16, s += 16, d += 16)
            _mm_storeu_si128((void *)d, _mm_load_si128((const void *)s));
        if (left == 8)
            *(uint64_t *)d = *(volatile const uint64_t *)s;
        if (skip)
            *(uint64_t *)dst = block; /* the header not read: ByteLength and zeros */
        else
            *(uint32_t *)dst = (uint32_t)block; /* ByteLength over the copied header */
        dst += block;
    }
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000;
    int rounds = 30, reps = n > 10000 ? 5 : 200;
    size_t src_len = (size_t)n * STRIDE + 4096;
    char path[] = "/tmp/copy_floor_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || ftruncate(fd, (off_t)src_len) != 0)
        return perror("block file"), 1;
    unlink(path);
    char *src = mmap(0, src_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    char *defs = aligned_alloc(4096, (size_t)n * 64 + 4096);
    char *out = aligned_alloc(4096, (size_t)n * STRIDE + 8192);
    char *copy = aligned_alloc(4096, (size_t)n * STRIDE + 8192);
    entry *e = malloc(sizeof(entry) * n);
    if (src == MAP_FAILED || !defs || !out || !copy || !e)
        return perror("memory"), 1;
    memset(src, 1, src_len);
    memset(defs, 2, (size_t)n * 64 + 4096);
    memset(out, 0, (size_t)n * STRIDE + 8192);
    memset(copy, 0, (size_t)n * STRIDE + 8192);
    for (long i = 0; i < n; i++)
        e[i] = (entry){(uint32_t)i, DEF};
    volatile size_t stride = STRIDE, block = BLOCK; /* run-time values */
    const char *names[] = {"memcpy", "fixed", "entries", "entries-2lines"};
    double best[4] = {1e9, 1e9, 1e9, 1e9};
    /* Rounds outside, variants inside: a noisy moment of the host falls on all four alike. */
    for (int r = 0; r < rounds; r++) {
        for (int v = 0; v < 4; v++) {
            double t = now();
            for (int j = 0; j < reps; j++) {
                switch (v) {
                case 0: memcpy(copy + 2048, out, (size_t)n * OUT); break;
                case 1: fixed(out + 8, src, defs, n); break;
                case 2: with_entries(out + 8, src, defs, e, n, stride, block, 0, 0); break;
                case 3: with_entries(out + 8, src, defs, e, n, stride, block, 56, 8); break;
                }
                __asm__ volatile("" ::"r"(out), "r"(copy) : "memory");
            }
            double each = (now() - t) / reps;
            if (each < best[v])
                best[v] = each;
        }
    }
    printf("%ld instances, %ld bytes out\n", n, n * OUT);
    for (int v = 0; v < 4; v++)
        printf("%-15s %10.2f us  %5.2fx memcpy\n", names[v], best[v] * 1e6, best[v] / best[0]);
    return 0;
}
