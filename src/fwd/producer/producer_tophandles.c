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

rd_kafka_topic_t *kd_producer_topic(kd_fwd_t *f, const char *topic)
{
        kd_producer_t *k = f->producer;
        if (!k || !k->main)
                return NULL;
        rd_kafka_topic_t **slot = &k->tophandles[slot_of(topic)];
        if (*slot && !strcmp(rd_kafka_topic_name(*slot), topic))
                return *slot;
        /* Asks for the topic's metadata at once when it is new to the
         * producer. */
        rd_kafka_topic_t *t = rd_kafka_topic_new(k->main, topic, NULL);
        if (!t)
                return NULL;
        if (*slot)
                rd_kafka_topic_destroy(*slot);
        *slot = t;
        return t;
}

void kd_producer_topics_release(kd_producer_t *k)
{
        for (size_t i = 0; i < KD_TOPHANDLE_SLOTS; i++) {
                if (k->tophandles[i])
                        rd_kafka_topic_destroy(k->tophandles[i]);
                k->tophandles[i] = NULL;
        }
}
