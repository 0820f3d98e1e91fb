/* SPDX-License-Identifier: Apache-2.0 */
/* The fate table (docs/fate-protocol.md): cancel, status, and the
 * forwarder's batched claim / mark-fired. A store is one implementation
 * behind an operations table (kd_fate_ops.h): kd_fate_store_new makes the
 * MySQL one (fate_mysql.c: one connection, opened lazily and reopened
 * after a connection error; not thread-safe). The tests' in-memory store
 * (tests/common/kd_fate_mem.h, not part of the library) is another. The
 * calls on a store are fate.c's; what a row says (kd_fate_name,
 * kd_fate_parse, kd_fate_owner_split, kd_unclaimed_*), fate_row.c's. */
#ifndef KD_FATE_H
#define KD_FATE_H

#include <stddef.h>
#include <stdint.h>

#include <kdelay/kdelay.h>

typedef struct kd_fate_store kd_fate_store_t;

/* The longest owner a row holds (the owner column's width). */
#define KD_FATE_OWNER_MAX 64
/* The longest dead-letter reason a DEAD row records (kdelay_status_t has
 * room for it). */
#define KD_FATE_REASON_MAX 31

/* Every call below checks its arguments first, the same for every
 * implementation: an id longer than KDELAY_ID_MAX bytes (or NULL) is
 * KDELAY_ERR_INVALID_ID, a takeover token NULL or longer than
 * KD_FATE_OWNER_MAX bytes or a negative gc batch KDELAY_ERR_INVALID_ARG,
 * and nothing is sent; an empty batch is KDELAY_OK without a statement. */

/* The MySQL store. conf is borrowed and must outlive the store. Connects
 * on first use. */
kdelay_err_t kd_fate_store_new(kd_fate_store_t **storep,
                               const kdelay_conf_t *conf);
void kd_fate_store_destroy(kd_fate_store_t *store);

/* Connects now (and checks the schema version) if not connected. */
kdelay_err_t kd_fate_store_connect(kd_fate_store_t *store, char *errstr,
                                   size_t errstr_size);

/* Inserts CANCELLED unless a row exists or a journal is pending (one
 * statement: kd_fate_pending_t). KDELAY_OK when the task is (now or
 * already) cancelled, KDELAY_ERR_TOO_LATE when it is FIRING or FIRED,
 * KDELAY_ERR_DEAD when DEAD, and KDELAY_ERR_RECONCILING when a journal
 * is pending and the row is not FIRING, FIRED or DEAD: the task may have
 * been fired without a claim; retry once it is applied. */
kdelay_err_t kd_fate_cancel(kd_fate_store_t *store, const char *id,
                            size_t id_len, char *errstr, size_t errstr_size);

/* The row of id; a FIRING row covered by a run (kd_fate_mark_runs) reads
 * FIRED, here and in every read below. */
kdelay_err_t kd_fate_status(kd_fate_store_t *store, const char *id,
                            size_t id_len, kdelay_status_t *status,
                            char *errstr, size_t errstr_size);

/* One task of a claim batch. */
typedef struct kd_fate_claim {
        const char *id; /* borrowed */
        size_t id_len;
        int64_t fire_at_ms;
        kdelay_fate_t fate; /* out: FIRING = go ahead and produce,
                               FIRED = already delivered, skip,
                               CANCELLED = drop */
        const char *token;  /* owner written if this claim inserts the row;
                               NULL = the call's owner. <= 64 bytes */
        char row_owner[KD_FATE_OWNER_MAX + 1]; /* out: the row's owner */
        int64_t lease_ms;      /* the claim's lease, from now by the store's
                                  clock, written when this item inserts, takes
                                  over or (owner equal) claims its row again;
                                  0 = none */
        int64_t lease_left_ms; /* out: how long the row's lease still
                                  holds by the store's clock; 0 = expired,
                                  -1 = the row has none */
        int own_previous;      /* in (takeover): row_owner is this
                                  instance's previous process, surely gone:
                                  taken over though its lease holds */
        int fresh; /* in (claim): token is set, was never sent before and
                      is no other item's, so no row is this claim's own
                      yet; when every item of a batch is fresh and inserts
                      its row, the store may skip reading the rows back */
        /* in: where the task's record was read, written with the row when
         * this item inserts or takes it over (kdelayctl audit reads it);
         * src_topic NULL = not known. Borrowed, <= 255 bytes. */
        const char *src_topic;
        int32_t src_partition;
        int64_t src_offset;
} kd_fate_claim_t;

/* Claims n tasks: INSERT IGNORE ... 'FIRING' for all; unless every item
 * is fresh and the insert added a row for each (then each is FIRING under
 * its own token, with the lease it asked for: one statement), a FIRING
 * row of an item's own token gets its lease renewed (a second statement,
 * when some item is not fresh) and every row is read back (on MySQL a
 * second read when a FIRING row is under an owner token that is none of
 * the items' own: the run test of its owner by constants, as
 * kd_fate_lookup's). A claim "won" when
 * row_owner equals its token; FIRING with another owner means another claim
 * came first, whose lease holds for lease_left_ms more. */
kdelay_err_t kd_fate_claim(kd_fate_store_t *store, kd_fate_claim_t *items,
                           size_t n, const char *owner, char *errstr,
                           size_t errstr_size);

/* Takes over n FIRING claims whose owner seems gone: for each item whose
 * row is FIRING under owner row_owner (as a claim returned it) and whose
 * lease has expired (or that has none, or the item is own_previous), and
 * that no run covers (it was delivered: kd_fate_mark_runs), sets
 * the owner to token and the
 * item's lease, atomically (compare-and-set). Then reads the rows back
 * like kd_fate_claim: the item won when row_owner equals token. Two
 * statements. */
kdelay_err_t kd_fate_takeover(kd_fate_store_t *store, kd_fate_claim_t *items,
                              size_t n, char *errstr, size_t errstr_size);

/* Marks n FIRING tasks FIRED in one statement. */
kdelay_err_t kd_fate_mark_fired(kd_fate_store_t *store, const char *const *ids,
                                const size_t *id_lens, size_t n, char *errstr,
                                size_t errstr_size);

/* The longest run prefix kd_fate_mark_runs takes: room is left in an
 * owner for ':' and one digit. */
#define KD_FATE_RUN_PREFIX_MAX (KD_FATE_OWNER_MAX - 2)

/* Records that every FIRING row whose owner is `prefix:s`, with
 * lo[i] <= s <= hi[i] for some i, was delivered (kdelay_fired_run, schema
 * 10; docs/fate-protocol.md, "Runs of delivered claims"): from then on such
 * a row reads FIRED (kd_fate_status, the claim read-back, kd_fate_lookup),
 * is never taken over and is left out of kd_fate_firing. prefix is a claim
 * token's '<token_name>:<boot>.<gen>': 3..KD_FATE_RUN_PREFIX_MAX bytes,
 * exactly one ':' with bytes on both sides; the runs ascend and are
 * disjoint (lo[i] <= hi[i] < lo[i+1]), and must not overlap a run recorded
 * before under the same prefix: the run with the greatest lo at or below s
 * decides whether s is covered. A run whose (prefix, lo) is recorded
 * already is left as it is (INSERT IGNORE: a request retried after a lost
 * answer is OK). One statement. */
kdelay_err_t kd_fate_mark_runs(kd_fate_store_t *store, const char *prefix,
                               const uint64_t *lo, const uint64_t *hi, size_t n,
                               char *errstr, size_t errstr_size);

/* The store's schema version (kdelay_schema, kd_schema.h) into
 * *versionp: 0 for a store that has none (the in-memory one). A
 * forwarder under forwarder.fate_marks=auto reads it every 30 s. */
kdelay_err_t kd_fate_schema_version(kd_fate_store_t *store, int *versionp,
                                    char *errstr, size_t errstr_size);

/* Deletes at most batch runs (kd_fate_mark_runs) recorded before
 * created_before_ms; *deletedp gets the count. kdelayctl db gc calls it
 * after kd_fate_gc has deleted every row it would, with the same
 * due_before_ms: a covered row was claimed and due before its run was
 * recorded, so its row is gone first. One statement. */
kdelay_err_t kd_fate_gc_runs(kd_fate_store_t *store, int64_t created_before_ms,
                             int batch, uint64_t *deletedp, char *errstr,
                             size_t errstr_size);

/* Splits a row's owner the way runs cover it: '<a>:<b>:<seq>', a and b
 * non-empty without ':', seq a number in its shortest decimal form
 * (no sign, no leading zero) up to UINT64_MAX. 1 with *prefix_lenp (the
 * bytes of '<a>:<b>') and *seqp set; 0 for any other owner (a run covers
 * none of those). */
int kd_fate_owner_split(const char *owner, size_t len, size_t *prefix_lenp,
                        uint64_t *seqp);

/* Marks n FIRING tasks DEAD with reason (1..KD_FATE_REASON_MAX bytes of
 * [a-z-], a dead-letter reason) in one statement: they were claimed, then
 * dead-lettered. Rows in any other state stay. */
kdelay_err_t kd_fate_mark_dead(kd_fate_store_t *store, const char *const *ids,
                               const size_t *id_lens, size_t n,
                               const char *reason, char *errstr,
                               size_t errstr_size);

/* Records the due time of n CANCELLED tasks a forwarder dropped (rows
 * still without one), so gc can tell when the task is long past. One
 * statement. */
kdelay_err_t kd_fate_note_cancelled(kd_fate_store_t *store,
                                    const char *const *ids,
                                    const size_t *id_lens,
                                    const int64_t *fire_ats, size_t n,
                                    char *errstr, size_t errstr_size);

/* Deletes at most `batch` rows decided before due_before_ms of tasks due
 * before it too, or, for rows whose due time is unknown (cancelled, never
 * seen by a forwarder), decided before decided_before_ms. A row whose
 * decision is recent stays whatever its due time: a task scheduled with a
 * due time long past and cancelled now is still in its tier topic. *deletedp
 * gets the count; call again until it is below batch. One statement per call.
 */
kdelay_err_t kd_fate_gc(kd_fate_store_t *store, int64_t due_before_ms,
                        int64_t decided_before_ms, int batch,
                        uint64_t *deletedp, char *errstr, size_t errstr_size);

/* One FIRING row as kd_fate_firing lists it. */
typedef struct kd_fate_firing {
        char id[KDELAY_ID_MAX + 1]; /* NUL-terminated */
        size_t id_len;
        char owner[KD_FATE_OWNER_MAX + 1]; /* "" = none */
        int64_t fire_at_ms;                /* -1 = not recorded */
        int64_t updated_at_ms;
        char src_topic[256]; /* "" = the claim recorded no location */
        int32_t src_partition;
        int64_t src_offset;
} kd_fate_firing_t;

/* Lists at most max FIRING rows not covered by a run (kd_fate_mark_runs)
 * last changed before updated_before_ms or
 * after updated_after_ms (a claimer whose clock ran ahead: its rows' age
 * is unknown), oldest change first, into rows (the caller's array); *np
 * gets how many. INT64_MAX / INT64_MAX lists every FIRING row. On MySQL
 * a few statements: the runs read once, the FIRING rows in pages of
 * 5,000 by primary key, each tested in memory (one walk of a prefix's
 * runs per row in SQL made it rows x runs). */
kdelay_err_t kd_fate_firing(kd_fate_store_t *store, int64_t updated_before_ms,
                            int64_t updated_after_ms, kd_fate_firing_t *rows,
                            size_t max, size_t *np, char *errstr,
                            size_t errstr_size);

/* The fates of n ids into fates[i] (UNDECIDED: no row). One statement;
 * on MySQL a second one when a row read is FIRING under an owner token a
 * run could cover: the rows of those owners read again, each owner's run
 * test by constants (one index dive each, however many runs come after
 * it; a test correlated with each row walks them). */
kdelay_err_t kd_fate_lookup(kd_fate_store_t *store, const char *const *ids,
                            const size_t *id_lens, size_t n,
                            kdelay_fate_t *fates, char *errstr,
                            size_t errstr_size);

/* The fate table's rows by state as its readers see them: a FIRING row
 * a run covers (kd_fate_mark_runs) is FIRED, as kd_fate_status says. */
typedef struct kd_fate_counts {
        uint64_t firing;        /* FIRING rows no run covers: in flight */
        uint64_t fired;         /* FIRED rows and FIRING rows a run covers */
        uint64_t fired_by_runs; /* of fired: the FIRING rows a run covers */
        uint64_t cancelled;
        uint64_t dead;
} kd_fate_counts_t;

/* Counts every row by state into *counts (kdelayctl stats). On MySQL one
 * grouped count of the table, then, as kd_fate_firing, the runs read
 * once and the FIRING rows' owners in pages by primary key, each tested
 * in memory: a scan of the table, never a statement per row. Not one
 * snapshot: a row that changes meanwhile may be counted as it was. */
kdelay_err_t kd_fate_counts(kd_fate_store_t *store, kd_fate_counts_t *counts,
                            char *errstr, size_t errstr_size);

/* What a fate row said when the journal of fires made without a claim
 * was applied to it (kdelay_unclaimed.prior, deploy/mysql/007). */
typedef enum kd_unclaimed_prior {
        KD_PRIOR_FIRED,     /* no row, or FIRED already */
        KD_PRIOR_CANCELLED, /* cancelled first, then delivered anyway */
        KD_PRIOR_FIRING,    /* a claim was out */
        KD_PRIOR_DEAD       /* DEAD (another copy dead-lettered); stays */
} kd_unclaimed_prior_t;
#define KD_PRIORS (KD_PRIOR_DEAD + 1)

/* "fired", "cancelled", "firing", "dead"; static. */
const char *kd_unclaimed_prior_str(kd_unclaimed_prior_t prior);

/* One fire made without a claim (forwarder.fate_outage_policy=fire), as
 * its journal record tells it. */
typedef struct kd_fate_unclaimed {
        const char *id; /* borrowed */
        size_t id_len;
        int64_t fire_at_ms;
        int64_t fired_at_ms;   /* when it was produced */
        const char *forwarder; /* borrowed; <= KD_FATE_OWNER_MAX bytes
                                  written; NULL = not known */
        const char *src_topic; /* borrowed; NULL = not known */
        int32_t src_partition;
        int64_t src_offset;
        const char *dead_reason; /* borrowed: the fire failed for good and
                                    the task was dead-lettered with this
                                    reason ([a-z-], <= KD_FATE_REASON_MAX);
                                    NULL = delivered */
        int intent; /* a record of intent (at_least_once writes it before
                       the fire): the task may have been delivered. No
                       fate row is inserted or changed; only a task whose
                       row is CANCELLED is put on record (a cancelled task
                       that may have been delivered) */
        kd_unclaimed_prior_t prior; /* out: what the fate row said */
        int64_t cancelled_at_ms;    /* out: with prior CANCELLED, when it
                                       was cancelled (the row's decided
                                       time); -1 otherwise */
        int recorded;               /* out: 1 = this call recorded it (it was
                                       not applied before) */
} kd_fate_unclaimed_t;

/* Applies n journal entries: a delivered task's row becomes FIRED
 * (inserted, or updated from CANCELLED or FIRING; FIRED and DEAD stay), a
 * dead-lettered one's DEAD with its reason (inserted, or updated from
 * FIRING; CANCELLED stays: it was not delivered), and a kdelay_unclaimed
 * row records the fire with what the row said before, unless one exists
 * (the first application's answer stays). A record of intent (intent)
 * changes no fate row: its task is put on record only when its row is
 * CANCELLED (then its row stays CANCELLED until a delivery record comes).
 * Idempotent and safe beside claims, cancels and another applier: a
 * cancel that comes after the first statement finds the row (too late,
 * or dead). At most five statements (three when no row conflicts; the
 * first only when an item is not an intent). */
kdelay_err_t kd_fate_apply_unclaimed(kd_fate_store_t *store,
                                     kd_fate_unclaimed_t *items, size_t n,
                                     char *errstr, size_t errstr_size);

/* When a task on record with prior "cancelled" was cancelled, against
 * its fire without a claim: "before_fire" (cancelled, then fired through
 * the outage: the risk fate_outage_policy=fire takes), "after_fire" (fired
 * first, cancelled in the window between MySQL's return and the
 * reconciliation's mark: the cancel answered OK for a task already
 * fired), NULL when not known (cancelled_at_ms < 0). Static. */
const char *kd_unclaimed_cancel_when(int64_t cancelled_at_ms,
                                     int64_t fired_at_ms);

/* One kdelay_unclaimed row as kd_fate_unclaimed_list reads it. */
typedef struct kd_fate_unclaimed_row {
        char id[KDELAY_ID_MAX + 1]; /* NUL-terminated */
        size_t id_len;
        kd_unclaimed_prior_t prior;
        int64_t fire_at_ms, fired_at_ms, applied_at_ms;
        char forwarder[KD_FATE_OWNER_MAX + 1]; /* "" = not known */
        char src_topic[256];                   /* "" = not known */
        int32_t src_partition;
        int64_t src_offset;
        char dead_reason[KD_FATE_REASON_MAX + 1]; /* "" = delivered */
        int64_t cancelled_at_ms; /* prior cancelled: when; -1 = not known
                                    (applied before schema 9) or none */
} kd_fate_unclaimed_row_t;

/* Lists kdelay_unclaimed rows into rows (the caller's array, max of
 * them; *np gets how many): the row of id when id is not NULL, else at
 * most max rows with prior `prior` (-1 = any) applied at or after
 * applied_after_ms, oldest first; with prior KD_PRIOR_CANCELLED only the
 * delivered ones (a cancelled task dead-lettered was not delivered). One
 * statement. */
kdelay_err_t kd_fate_unclaimed_list(kd_fate_store_t *store, const char *id,
                                    size_t id_len, int prior,
                                    int64_t applied_after_ms,
                                    kd_fate_unclaimed_row_t *rows, size_t max,
                                    size_t *np, char *errstr,
                                    size_t errstr_size);

/* Deletes at most batch kdelay_unclaimed rows applied before
 * applied_before_ms; *deletedp gets the count. One statement. */
kdelay_err_t kd_fate_gc_unclaimed(kd_fate_store_t *store,
                                  int64_t applied_before_ms, int batch,
                                  uint64_t *deletedp, char *errstr,
                                  size_t errstr_size);

/* The reconciliation marker of a journal (kdelay_reconcile,
 * deploy/mysql/009; docs/fate-protocol.md, "While a reconciliation is
 * pending"): while fires made without a claim may be in a journal and
 * not yet in the fate table, the journal is pending, and kd_fate_cancel
 * answers KDELAY_ERR_RECONCILING instead of inserting CANCELLED. */
typedef struct kd_fate_pending {
        uint64_t epoch;       /* bumped by every mark; 0 = no row */
        int64_t since_ms;     /* pending since (the marker's clock); -1 = not */
        int64_t marked_at_ms; /* the last mark or renewal (the store's
                                 clock); -1 = none */
        int64_t marked_age_ms; /* how long ago that was when read, by the
                                  store's clock (MySQL's server: no host's
                                  clock enters); -1 = none */
        char by[KD_FATE_OWNER_MAX + 1]; /* who marked last; "" */
        char journal[256];              /* which journal */
} kd_fate_pending_t;

/* Marks journal (1..255 bytes) pending, by `by` (<= KD_FATE_OWNER_MAX
 * bytes; NULL = not known): the epoch goes up by one; pending_since stays
 * when it was pending already. One statement. */
kdelay_err_t kd_fate_pending_mark(kd_fate_store_t *store, const char *journal,
                                  const char *by, char *errstr,
                                  size_t errstr_size);

/* Reads the marker of journal into *p; journal NULL: the longest-pending
 * journal of all (epoch 0 and since_ms -1 when none is pending). One
 * statement. */
kdelay_err_t kd_fate_pending_get(kd_fate_store_t *store, const char *journal,
                                 kd_fate_pending_t *p, char *errstr,
                                 size_t errstr_size);

/* Renews journal's mark, by `by`: marked_at becomes the store's now and
 * marked_by `by`, the epoch and pending_since stay; nothing when it is not
 * pending. A forwarder whose own fires without a claim are not settled renews
 * its mark so that no other clears it (kd_fate_pending_clear's stale_ms). One
 * statement. */
kdelay_err_t kd_fate_pending_renew(kd_fate_store_t *store, const char *journal,
                                   const char *by, char *errstr,
                                   size_t errstr_size);

/* Clears journal's mark if its epoch is still `epoch` (no mark since the
 * caller read it), by `by`, and, with stale_ms >= 0, only if nobody (the
 * caller included) marked or renewed it for stale_ms by the store's clock:
 * no forwarder with fires unsettled is left; *p gets the marker as it is
 * afterwards: still pending (since_ms >= 0) when marked again since, or
 * renewed within stale_ms. Two statements. */
kdelay_err_t kd_fate_pending_clear(kd_fate_store_t *store, const char *journal,
                                   uint64_t epoch, const char *by,
                                   int64_t stale_ms, kd_fate_pending_t *p,
                                   char *errstr, size_t errstr_size);

/* Makes a call blocked in the store (on another thread) fail soon, and
 * every later call fail at once: for stopping a thread that uses the
 * store. Thread-safe; the store is good only for kd_fate_store_destroy
 * afterwards. */
void kd_fate_store_interrupt(kd_fate_store_t *store);

/* Statements sent since the store was created (for cost measurements);
 * like the connection's own setup, the array-bound claim's one prepare
 * per connection (fate_claim_bulk.c) is not counted. */
uint64_t kd_fate_statements(const kd_fate_store_t *store);

/* A fate's name as the state column writes it: "FIRING", "FIRED",
 * "CANCELLED", "DEAD", and "UNDECIDED" for any other value (what
 * kdelay_fate_str answers). Static. */
const char *kd_fate_name(kdelay_fate_t fate);

/* "FIRING" -> KDELAY_FATE_FIRING ...: kd_fate_name read back; UNDECIDED
 * for anything else (NULL too). */
kdelay_fate_t kd_fate_parse(const char *s);

#endif
