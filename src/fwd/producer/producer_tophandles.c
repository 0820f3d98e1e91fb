/* SPDX-License-Identifier: Apache-2.0 */
/* The producer room's topic handles by name (kd_producer_topic). */
#include <stdint.h>
#include <string.h>

#include "kd_producer_state.h"

/* FNV-1a of name, reduced to a slot. */
static size_t slot_of(const char *name)
{
        uint64_t h = 14695981039346656037ULL;
        for (const unsigned char *p = (const unsigned char *)name; *p; p++)
                h = (h ^ *p) * 1099511628211ULL;
        return (size_t)(h % KD_TOPHANDLE_SLOTS);
}

/* rk's handle of topic in slots (rk's table), made if missing. */
static rd_kafka_topic_t *handle_in(rd_kafka_t *rk, rd_kafka_topic_t **slots,
                                   const char *topic)
{
        rd_kafka_topic_t **slot = &slots[slot_of(topic)];
        if (*slot && !strcmp(rd_kafka_topic_name(*slot), topic))
                return *slot;
        /* Asks for the topic's metadata at once when it is new to the
         * producer. */
        rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topic, NULL);
        if (!t)
                return NULL;
        if (*slot)
                rd_kafka_topic_destroy(*slot);
        *slot = t;
        return t;
}

rd_kafka_topic_t *kd_producer_topic(kd_fwd_t *f, const char *topic)
{
        kd_producer_t *k = f->producer;
        if (!k || !k->main)
                return NULL;
        return handle_in(k->main, k->tophandles, topic);
}

rd_kafka_topic_t *kd_producer_bulk_topic(kd_producer_t *k, const char *topic)
{
        if (!k->bulk)
                return NULL;
        return handle_in(k->bulk, k->bulk_handles, topic);
}

static void release(rd_kafka_topic_t **slots)
{
        for (size_t i = 0; i < KD_TOPHANDLE_SLOTS; i++) {
                if (slots[i])
                        rd_kafka_topic_destroy(slots[i]);
                slots[i] = NULL;
        }
}

void kd_producer_topics_release(kd_producer_t *k)
{
        release(k->tophandles);
}

void kd_producer_bulk_topics_release(kd_producer_t *k)
{
        release(k->bulk_handles);
}
