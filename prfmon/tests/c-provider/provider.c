/*
 * A third-party perflib provider written in C, as a vendor would ship one: the three winperf.h
 * exports (as "How the DLL Interfaces with a Performance Monitor Application" describes
 * them), strings in UTF-16 (Windows' WCHAR), nothing but libc. The prfmon tests
 * build it with `cc -shared -fPIC` (see `c_provider` in tests/common) and register it under
 * several services.
 *
 * What it returns is chosen by the `Linkage\Export` strings passed to Open:
 *
 *   export[0]  mode: "good", "dword" or "word"              (default "good")
 *   export[1]  the object's name index N                     (default 1848)
 *   export[2]  a value V                                     (default 7)
 *
 * Each object has three counters (name indexes N+2, N+4, N+6), no instances, and a counter
 * block of 20 bytes:
 *
 *   +0  PERF_COUNTER_BLOCK.ByteLength
 *   +4  PERF_COUNTER_RAWCOUNT        V
 *   +8  PERF_COUNTER_LARGE_RAWCOUNT  2^40 + V   (8-aligned inside the object)
 *   +16 PERF_COUNTER_RAWCOUNT        the number of Collect calls so far
 *
 *   good   one object of 208 bytes (the block's ByteLength is 24: 4 bytes of padding)
 *   dword  three objects (indexes N, N+10, N+20), each 204 bytes: TotalByteLength and the
 *          byte count are multiples of 4, not of 8 (valid per "How the DLL Interfaces
 *          with a Performance Monitor Application": "a multiple of a DWORD")
 *   word   one object of 206 bytes (2 stray bytes in its counter block): a byte count that is
 *          not even a multiple of 4
 *
 * State is process-wide (one mode, one index per loaded copy), as most providers' is: two
 * services sharing one loaded copy would see the second Open's settings.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ERROR_SUCCESS 0u
#define ERROR_MORE_DATA 234u

#define PERF_COUNTER_RAWCOUNT 0x00010000u
#define PERF_COUNTER_LARGE_RAWCOUNT 0x00010100u
#define PERF_DETAIL_NOVICE 100u

#define OBJECT_HEADER 64u
#define COUNTER_DEFINITION 40u
#define NUM_COUNTERS 3u
#define DEFINITION_LENGTH (OBJECT_HEADER + NUM_COUNTERS * COUNTER_DEFINITION)

static char mode[16] = "good";
static uint32_t name_index = 1848;
static uint32_t value = 7;
static uint32_t calls = 0;

/* Copies the next UTF-16 string of a multi-sz into `out` (ASCII, truncated); returns the
 * pointer after its NUL, or NULL at the end of the list. */
static const uint16_t *next_string(const uint16_t *p, char *out, size_t room) {
    size_t n = 0;
    if (p == NULL || *p == 0) {
        return NULL;
    }
    while (*p != 0) {
        if (n + 1 < room) {
            out[n++] = (char)(*p < 128 ? *p : '?');
        }
        p++;
    }
    out[n] = 0;
    return p + 1;
}

static void put32(uint8_t *at, uint32_t v) { memcpy(at, &v, 4); }
static void put64(uint8_t *at, uint64_t v) { memcpy(at, &v, 8); }

/* Writes one object at `at`, `total` bytes long with a counter block of `block` bytes. */
static void write_object(uint8_t *at, uint32_t index, uint32_t total, uint32_t block) {
    memset(at, 0, total);
    /* PERF_OBJECT_TYPE */
    put32(at + 0, total);              /* TotalByteLength */
    put32(at + 4, DEFINITION_LENGTH);  /* DefinitionLength */
    put32(at + 8, OBJECT_HEADER);      /* HeaderLength */
    put32(at + 12, index);             /* ObjectNameTitleIndex */
    put32(at + 20, index + 1);         /* ObjectHelpTitleIndex */
    put32(at + 28, PERF_DETAIL_NOVICE);/* DetailLevel */
    put32(at + 32, NUM_COUNTERS);      /* NumCounters */
    put32(at + 36, 0);                 /* DefaultCounter */
    put32(at + 40, 0xFFFFFFFFu);       /* NumInstances = PERF_NO_INSTANCES */
    put32(at + 44, 0);                 /* CodePage */
    put64(at + 48, 0);                 /* PerfTime */
    put64(at + 56, 10000000);          /* PerfFreq */
    /* PERF_COUNTER_DEFINITION x 3 */
    static const uint32_t types[NUM_COUNTERS] = {
        PERF_COUNTER_RAWCOUNT, PERF_COUNTER_LARGE_RAWCOUNT, PERF_COUNTER_RAWCOUNT};
    static const uint32_t sizes[NUM_COUNTERS] = {4, 8, 4};
    static const uint32_t offsets[NUM_COUNTERS] = {4, 8, 16};
    for (uint32_t k = 0; k < NUM_COUNTERS; k++) {
        uint8_t *d = at + OBJECT_HEADER + k * COUNTER_DEFINITION;
        put32(d + 0, COUNTER_DEFINITION);     /* ByteLength */
        put32(d + 4, index + 2 + 2 * k);      /* CounterNameTitleIndex */
        put32(d + 12, index + 3 + 2 * k);     /* CounterHelpTitleIndex */
        put32(d + 20, 0);                     /* DefaultScale */
        put32(d + 24, PERF_DETAIL_NOVICE);    /* DetailLevel */
        put32(d + 28, types[k]);              /* CounterType */
        put32(d + 32, sizes[k]);              /* CounterSize */
        put32(d + 36, offsets[k]);            /* CounterOffset */
    }
    /* PERF_COUNTER_BLOCK and the values */
    uint8_t *b = at + DEFINITION_LENGTH;
    put32(b + 0, block);
    put32(b + 4, value);
    put64(b + 8, ((uint64_t)1 << 40) + value);
    put32(b + 16, calls);
}

uint32_t OpenPerformanceData(uint16_t *device_names) {
    char text[32];
    const uint16_t *p = device_names;
    if ((p = next_string(p, mode, sizeof mode)) != NULL) {
        if ((p = next_string(p, text, sizeof text)) != NULL) {
            name_index = (uint32_t)strtoul(text, NULL, 10);
            if (next_string(p, text, sizeof text) != NULL) {
                value = (uint32_t)strtoul(text, NULL, 10);
            }
        }
    }
    return ERROR_SUCCESS;
}

/* Whether the query (Global, Costly or an index list) asks for object `index`. */
static int wanted(const uint16_t *query, uint32_t index) {
    char text[256];
    size_t n = 0;
    if (query == NULL) {
        return 1;
    }
    while (query[n] != 0 && n + 1 < sizeof text) {
        text[n] = (char)(query[n] < 128 ? query[n] : '?');
        n++;
    }
    text[n] = 0;
    if (strcmp(text, "Global") == 0) {
        return 1;
    }
    if (strcmp(text, "Costly") == 0) {
        return 0;
    }
    for (char *word = strtok(text, " \t"); word != NULL; word = strtok(NULL, " \t")) {
        if ((uint32_t)strtoul(word, NULL, 10) == index) {
            return 1;
        }
    }
    return 0;
}

uint32_t CollectPerformanceData(uint16_t *query, void **data, uint32_t *bytes,
                                uint32_t *num_objects) {
    uint32_t count = 1, total = 208, block = 24;
    if (strcmp(mode, "dword") == 0) {
        count = 3;
        total = 204;
        block = 20;
    } else if (strcmp(mode, "word") == 0) {
        total = 206;
        block = 22;
    }
    calls++;
    int any = 0;
    for (uint32_t i = 0; i < count; i++) {
        any |= wanted(query, name_index + 10 * i);
    }
    if (!any) {
        *bytes = 0;
        *num_objects = 0;
        return ERROR_SUCCESS;
    }
    if (*bytes < count * total) {
        *bytes = 0;
        *num_objects = 0;
        return ERROR_MORE_DATA;
    }
    uint8_t *at = (uint8_t *)*data;
    for (uint32_t i = 0; i < count; i++) {
        write_object(at + i * total, name_index + 10 * i, total, block);
    }
    *data = at + count * total;
    *bytes = count * total;
    *num_objects = count;
    return ERROR_SUCCESS;
}

uint32_t ClosePerformanceData(void) { return ERROR_SUCCESS; }
