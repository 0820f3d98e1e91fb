/* SPDX-License-Identifier: Apache-2.0 */
/* The run tracker (kd_runs.h). */
#include "kd_pipeline_state.h"
#include "kd_runs.h"

#include <stdlib.h>
#include <string.h>

/* Words of the first bitmap (1,024 seqs). */
#define KD_RUNS_CAP0 16

/* Seqs first..(the next slice's first - 1, or last) were assigned in
 * [start_ms, last_ms], last_ms < start_ms + the tracker's slice_ms. */
typedef struct kd_runs_slice {
        uint64_t first;
        int64_t start_ms, last_ms;
} kd_runs_slice_t;

/* With slices slice_ms apart at least, the oldest of a full table ended
 * park_ms ago: folded before a new one is needed (slice_ms scales with
 * park_ms: kd_runs_set_park). */
_Static_assert((KD_RUNS_SLICES - 2) * KD_RUNS_SLICE_MS >= KD_RUN_PARK_MS,
               "too few slices for KD_RUN_PARK_MS");

struct kd_runs {
        char prefix[KD_RUNS_PREFIX_MAX];
        uint64_t emitted; /* every seq <= it is emitted or parked */
        uint64_t last;    /* the last seq assigned, >= emitted */
        /* Owned: bit s % 64 of word (s / 64) % cap is 1 when seq s is
         * DONE, for emitted < s <= last; the bits above last in last's
         * word are 0. */
        uint64_t *bits;
        size_t cap;       /* words, a power of two */
        int64_t park_ms;  /* an OPEN seq this old is parked */
        int64_t slice_ms; /* assign times are kept per slice this long */
        /* Every seq <= old_hi was assigned park_ms or more before
         * a now seen: parkable. */
        uint64_t old_hi;
        kd_runs_slice_t slice[KD_RUNS_SLICES]; /* a ring: the younger */
        size_t s_head, s_len;
};

static size_t slot(const kd_runs_t *r, uint64_t word)
{
        return (size_t)(word & (r->cap - 1));
}

static int bit(const kd_runs_t *r, uint64_t s)
{
        return (int)(r->bits[slot(r, s >> 6)] >> (s & 63)) & 1;
}

static int set_prefix(kd_runs_t *r, const char *prefix)
{
        size_t n = strlen(prefix);
        if (n >= sizeof(r->prefix))
                return -1;
        memcpy(r->prefix, prefix, n + 1);
        return 0;
}

static void reset(kd_runs_t *r, uint64_t last_seq)
{
        r->emitted = r->last = r->old_hi = last_seq;
        memset(r->bits, 0, r->cap * sizeof(*r->bits));
        r->s_head = r->s_len = 0;
}

kd_runs_t *kd_runs_new(const char *prefix, uint64_t last_seq)
{
        kd_runs_t *r = calloc(1, sizeof(*r));
        if (!r)
                return NULL;
        r->cap = KD_RUNS_CAP0;
        r->park_ms = KD_RUN_PARK_MS;
        r->slice_ms = KD_RUNS_SLICE_MS;
        r->bits = calloc(r->cap, sizeof(*r->bits));
        if (!r->bits || set_prefix(r, prefix)) {
                kd_runs_free(r);
                return NULL;
        }
        reset(r, last_seq);
        return r;
}

void kd_runs_free(kd_runs_t *r)
{
        if (!r)
                return;
        free(r->bits);
        free(r);
}

int kd_runs_restart(kd_runs_t *r, const char *prefix, uint64_t last_seq)
{
        if (set_prefix(r, prefix))
                return -1;
        reset(r, last_seq);
        return 0;
}

void kd_runs_set_park(kd_runs_t *r, int64_t park_ms)
{
        if (park_ms < KD_RUN_PARK_MS)
                park_ms = KD_RUN_PARK_MS;
        /* The slices keep the ratio the _Static_assert checks. */
        r->park_ms = park_ms;
        r->slice_ms =
            (park_ms * KD_RUNS_SLICE_MS + KD_RUN_PARK_MS - 1) / KD_RUN_PARK_MS;
}

int64_t kd_runs_park_ms(const kd_runs_t *r)
{
        return r->park_ms;
}

const char *kd_runs_prefix(const kd_runs_t *r)
{
        return r->prefix;
}

/* Room for the words of seqs emitted + 1 .. hi; -1 when out of memory
 * (nothing changed). The live words keep their absolute index. */
static int room(kd_runs_t *r, uint64_t hi)
{
        uint64_t w0 = (r->emitted + 1) >> 6, need = (hi >> 6) - w0 + 1;
        if (need <= r->cap)
                return 0;
        size_t cap = r->cap;
        while (cap < need)
                cap *= 2;
        uint64_t *b = calloc(cap, sizeof(*b));
        if (!b)
                return -1;
        /* The live words: w0 .. last's (none past last's word). */
        for (uint64_t w = w0; w <= r->last >> 6; w++)
                b[w & (cap - 1)] = r->bits[slot(r, w)];
        free(r->bits);
        r->bits = b;
        r->cap = cap;
        return 0;
}

static void raise_old(kd_runs_t *r, uint64_t s)
{
        if (s > r->old_hi)
                r->old_hi = s;
}

/* Folds the slices that ended park_ms before now (all of them
 * when now is INT64_MAX) into old_hi. */
static void fold(kd_runs_t *r, int64_t now_ms)
{
        while (r->s_len > 0) {
                const kd_runs_slice_t *h = &r->slice[r->s_head];
                if (now_ms != INT64_MAX && h->last_ms > now_ms - r->park_ms)
                        return;
                size_t next = (r->s_head + 1) % KD_RUNS_SLICES;
                raise_old(r, r->s_len > 1 ? r->slice[next].first - 1 : r->last);
                r->s_head = next;
                r->s_len--;
        }
}

/* Notes seq's assign at now in the youngest slice, or a new one. */
static void note_time(kd_runs_t *r, uint64_t seq, int64_t now_ms)
{
        fold(r, now_ms);
        if (r->s_len > 0) {
                kd_runs_slice_t *t =
                    &r->slice[(r->s_head + r->s_len - 1) % KD_RUNS_SLICES];
                if (now_ms < t->last_ms)
                        now_ms = t->last_ms; /* never older than the last */
                if (now_ms < t->start_ms + r->slice_ms) {
                        t->last_ms = now_ms;
                        return;
                }
        }
        if (r->s_len == KD_RUNS_SLICES) {
                /* Not with a monotonic now (the assert above); parking the
                 * oldest early is safe: its delivered tasks mark alone. */
                size_t next = (r->s_head + 1) % KD_RUNS_SLICES;
                raise_old(r, r->slice[next].first - 1);
                r->s_head = next;
                r->s_len--;
        }
        r->slice[(r->s_head + r->s_len) % KD_RUNS_SLICES] =
            (kd_runs_slice_t){seq, now_ms, now_ms};
        r->s_len++;
}

int kd_runs_assign(kd_runs_t *r, uint64_t seq, int64_t now_ms)
{
        if (seq <= r->last)
                return -1;
        if (r->emitted == r->last) {
                /* Nothing waits: the seqs skipped need no run. */
                uint64_t skip = seq - 1 - r->last;
                r->emitted = r->last = r->last + skip;
                if (skip > 0 && (r->last & 63) != 63)
                        r->bits[slot(r, r->last >> 6)] = 0;
                raise_old(r, r->last); /* none is OPEN */
        }
        if (seq - r->emitted > KD_RUNS_WINDOW_MAX || room(r, seq))
                return -1;
        /* Words entered are cleared; the seqs skipped are DONE. */
        for (uint64_t w = (r->last >> 6) + 1; w <= seq >> 6; w++)
                r->bits[slot(r, w)] = 0;
        for (uint64_t s = r->last + 1; s < seq; s++)
                r->bits[slot(r, s >> 6)] |= (uint64_t)1 << (s & 63);
        note_time(r, seq, now_ms); /* folds up to the last, not seq */
        r->last = seq;
        return 0;
}

kd_runs_cover_t kd_runs_done(kd_runs_t *r, uint64_t seq)
{
        if (seq <= r->emitted || seq > r->last)
                return KD_RUNS_PARKED;
        r->bits[slot(r, seq >> 6)] |= (uint64_t)1 << (seq & 63);
        return KD_RUNS_RUN;
}

/* The first seq in s .. hi whose bit is not want, or hi + 1. */
static uint64_t stretch_end(const kd_runs_t *r, uint64_t s, uint64_t hi,
                            int want)
{
        while (s <= hi) {
                uint64_t w = r->bits[slot(r, s >> 6)];
                if (want)
                        w = ~w;
                w &= ~(uint64_t)0 << (s & 63); /* from s on */
                if (w) {
                        uint64_t at =
                            (s & ~(uint64_t)63) + (uint64_t)__builtin_ctzll(w);
                        return at <= hi ? at : hi + 1;
                }
                s = (s | 63) + 1;
        }
        return hi + 1;
}

/* kd_runs_take with every seq <= park_hi parkable. */
static size_t take(kd_runs_t *r, uint64_t park_hi, uint64_t *lo, uint64_t *hi,
                   size_t max, uint64_t *parked)
{
        size_t n = 0;
        while (r->emitted < r->last) {
                uint64_t s = r->emitted + 1;
                if (bit(r, s)) {
                        if (n == max)
                                break;
                        uint64_t end = stretch_end(r, s, r->last, 1);
                        lo[n] = s;
                        hi[n++] = end - 1;
                        r->emitted = end - 1;
                        continue;
                }
                if (s > park_hi)
                        break; /* young: wait for it */
                uint64_t lim = park_hi < r->last ? park_hi : r->last;
                uint64_t end = stretch_end(r, s, lim, 0);
                if (parked)
                        *parked += end - s;
                r->emitted = end - 1;
        }
        return n;
}

size_t kd_runs_take(kd_runs_t *r, int64_t now_ms, uint64_t *lo, uint64_t *hi,
                    size_t max, uint64_t *parked)
{
        fold(r, now_ms);
        return take(r, r->old_hi, lo, hi, max, parked);
}

size_t kd_runs_drop(kd_runs_t *r, uint64_t *lo, uint64_t *hi, size_t max,
                    uint64_t *parked)
{
        fold(r, INT64_MAX);
        return take(r, r->last, lo, hi, max, parked);
}

uint64_t kd_runs_waiting(const kd_runs_t *r)
{
        return r->last - r->emitted;
}

uint64_t kd_runs_emitted(const kd_runs_t *r)
{
        return r->emitted;
}

uint64_t kd_runs_last(const kd_runs_t *r)
{
        return r->last;
}

size_t kd_runs_bytes(const kd_runs_t *r)
{
        return sizeof(*r) + r->cap * sizeof(*r->bits);
}
