/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target for the done set that exactly_once writes into its
 * offset commits' metadata (kd_offtrack_encode,
 * src/lib/fwdonly/offtrack.c, and kd_doneset_decode,
 * src/lib/shared/doneset.c). The next owner of a partition decodes
 * whatever metadata it finds committed there, so the decoder reads
 * untrusted text.
 *
 * Input: byte 0 picks the mode (its value mod 2), the rest is its input:
 *
 *   0  text: 8 bytes commit point (little endian, any int64), then the
 *      metadata text (any bytes). When it decodes, the ranges must be
 *      increasing and above the commit point, and encoding them again
 *      (as the tail of an empty tracker) must decode to the same offsets;
 *   1  tracker: 6 bytes first offset, 2 bytes buffer size, 1 byte number
 *      of tail ranges (mod 4) and 2 bytes (gap, length) for each, then one
 *      byte per operation: below 0x80 adds the offset (byte mod 4) after
 *      the last one added, else marks the (byte - 0x80)th record from the
 *      end done. The commit point and the pending count must match a
 *      model, and what encodes must decode to exactly the done offsets
 *      above the commit point plus the tail.
 *
 * Built with libFuzzer when KDELAY_FUZZ=ON (scripts/fuzz.sh); always built
 * without it into tests/unit/lib/test_fuzz_regress_offmeta, which replays
 * fuzz/corpus/offmeta and fuzz/regress/offmeta. */
#include <string.h>

#include "kd_fuzz.h"
#include "kd_offtrack.h"

/* Merges adjacent ranges in place (the two forms may split a run
 * differently); returns the new count. */
static size_t merge(kd_offrange_t *r, size_t n)
{
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
                if (m > 0 && r[m - 1].last + 1 == r[i].first)
                        r[m - 1].last = r[i].last;
                else
                        r[m++] = r[i];
        }
        return m;
}

/* Ranges as decode promises them: each above commit and the one before. */
static void check_ranges(const kd_offrange_t *r, size_t n, int64_t commit)
{
        for (size_t i = 0; i < n; i++) {
                FZ_CHECK(r[i].first <= r[i].last);
                FZ_CHECK(r[i].first > (i ? r[i - 1].last : commit));
        }
}

static void fuzz_text(fz_in_t *in)
{
        int64_t commit = (int64_t)fz_u64(in, 8);
        const char *text = (const char *)in->p;
        kd_offrange_t *r = NULL;
        size_t cnt = 0;
        if (kd_doneset_decode(text, in->n, commit, &r, &cnt) != 0) {
                FZ_CHECK(r == NULL && cnt == 0);
                return;
        }
        check_ranges(r, cnt, commit);
        /* Encoded again: the same offsets (when it fits). */
        kd_offtrack_t t;
        kd_offtrack_init(&t);
        char buf[4096];
        int enc = kd_offtrack_encode(&t, commit, r, cnt, buf, sizeof(buf));
        /* Without a commit point only "" decodes, and nothing encodes. */
        if (commit < 0)
                FZ_CHECK(cnt == 0 && enc == -1);
        if (enc == 0) {
                size_t len = strlen(buf);
                FZ_CHECK(len < sizeof(buf));
                kd_offrange_t *back = NULL;
                size_t back_cnt = 0;
                FZ_CHECK(
                    kd_doneset_decode(buf, len, commit, &back, &back_cnt) == 0);
                check_ranges(back, back_cnt, commit);
                size_t a = merge(r, cnt), b = merge(back, back_cnt);
                FZ_CHECK(a == b);
                for (size_t i = 0; i < a; i++)
                        FZ_CHECK(r[i].first == back[i].first &&
                                 r[i].last == back[i].last);
                free(back);
        }
        kd_offtrack_clear(&t);
        free(r);
}

enum { FZ_MAX_RECORDS = 4096 };

static void fuzz_tracker(fz_in_t *in)
{
        static int64_t off[FZ_MAX_RECORDS];
        static unsigned char done[FZ_MAX_RECORDS];
        int64_t base = (int64_t)fz_u64(in, 6);
        size_t size = 5 + (size_t)fz_u64(in, 2) % 4096;
        size_t tail_n = fz_byte(in) % 4;
        uint8_t tail_spec[6];
        for (size_t i = 0; i < 2 * tail_n; i++)
                tail_spec[i] = fz_byte(in);
        kd_offtrack_t t;
        kd_offtrack_init(&t);
        size_t n = 0, low = 0; /* low: the first record not done */
        while (in->n > 0) {
                uint8_t op = fz_byte(in);
                if (op < 0x80 && n < FZ_MAX_RECORDS) {
                        off[n] = n ? off[n - 1] + 1 + op % 4 : base;
                        done[n] = 0;
                        FZ_CHECK(kd_offtrack_add(&t, off[n]) == 0);
                        n++;
                } else if (op >= 0x80 && n > 0) {
                        size_t back = (size_t)(op - 0x80) % n;
                        size_t i = n - 1 - back;
                        /* Below the commit point it is no longer tracked. */
                        FZ_CHECK(kd_offtrack_done(&t, off[i]) ==
                                 (i < low ? -1 : 0));
                        done[i] = 1;
                        while (low < n && done[low])
                                low++;
                }
        }
        /* The commit point and the pending count against the model. */
        size_t pending = 0;
        for (size_t i = 0; i < n; i++)
                pending += !done[i];
        int64_t next = n ? off[n - 1] + 1 : -1;
        FZ_CHECK(kd_offtrack_commit_point(&t) == (low < n ? off[low] : next));
        FZ_CHECK(kd_offtrack_pending(&t) == pending);
        FZ_CHECK(kd_offtrack_add(&t, n ? off[n - 1] : -1) == -1);

        /* Tail ranges: done by the previous owner, not read yet. */
        kd_offrange_t tail[3];
        int64_t at = n ? next : base;
        for (size_t i = 0; i < tail_n; i++) {
                tail[i].first = at + tail_spec[2 * i];
                tail[i].last = tail[i].first + tail_spec[2 * i + 1];
                at = tail[i].last + 2;
        }
        const kd_offrange_t *tp = tail;
        size_t tcnt = tail_n;
        int64_t cp = kd_offtrack_commit_after(&t, base, &tp, &tcnt);
        int64_t want = low < n ? off[low] : n ? next : base;
        size_t skip = 0;
        while (skip < tail_n && tail[skip].first <= want) {
                if (tail[skip].last >= want)
                        want = tail[skip].last + 1;
                skip++;
        }
        FZ_CHECK(cp == want && tp == tail + skip && tcnt == tail_n - skip);

        char *buf = malloc(size); /* exact, for ASan */
        FZ_CHECK(buf);
        if (kd_offtrack_encode(&t, cp, tp, tcnt, buf, size) == 0) {
                size_t len = strlen(buf);
                FZ_CHECK(len < size);
                kd_offrange_t *r = NULL;
                size_t cnt = 0;
                FZ_CHECK(kd_doneset_decode(buf, len, cp, &r, &cnt) == 0);
                check_ranges(r, cnt, cp);
                /* Records above cp: in a range iff done. Offsets never
                 * read (gaps) may fall inside a run: they never arrive. */
                size_t j = 0;
                int64_t lo = -1, hi = -1; /* the first and last to cover */
                for (size_t i = 0; i < n; i++) {
                        if (off[i] <= cp)
                                continue;
                        while (j < cnt && r[j].last < off[i])
                                j++;
                        int in_r = j < cnt && r[j].first <= off[i];
                        FZ_CHECK(in_r == done[i]);
                        if (done[i]) {
                                lo = lo < 0 ? off[i] : lo;
                                hi = off[i];
                        }
                }
                /* The tail is covered whole. */
                cnt = merge(r, cnt);
                j = 0;
                for (size_t i = 0; i < tcnt; i++) {
                        while (j < cnt && r[j].last < tp[i].first)
                                j++;
                        FZ_CHECK(j < cnt && r[j].first <= tp[i].first &&
                                 r[j].last >= tp[i].last);
                        lo = lo < 0 ? tp[i].first : lo;
                        hi = tp[i].last;
                }
                /* Nothing before the first or after the last. */
                FZ_CHECK(cnt == 0 ? lo < 0
                                  : r[0].first == lo && r[cnt - 1].last == hi);
                free(r);
        }
        free(buf);
        kd_offtrack_clear(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        fz_in_t in = {data, size};
        if (size == 0)
                return 0;
        if (fz_byte(&in) % 2 == 0)
                fuzz_text(&in);
        else
                fuzz_tracker(&in);
        return 0;
}
