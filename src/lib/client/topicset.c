/* SPDX-License-Identifier: Apache-2.0 */
/* A bounded set of topic names (kd_topicset.h). */
#include "kd_topicset.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define KD_TOPICSET_SLOTS (KD_TOPICSET_MAX * 2)

static size_t hash(const char *name) /* FNV-1a */
{
        uint64_t h = 1469598103934665603ull;
        for (const unsigned char *p = (const unsigned char *)name; *p; p++)
                h = (h ^ *p) * 1099511628211ull;
        return (size_t)(h % KD_TOPICSET_SLOTS);
}

/* The slot of name, or the empty slot where it would go. */
static size_t find(char *const *slot, const char *name)
{
        size_t i = hash(name);
        while (slot[i] && strcmp(slot[i], name))
                i = (i + 1) % KD_TOPICSET_SLOTS;
        return i;
}

int kd_topicset_has(const kd_topicset_t *s, const char *name)
{
        return s->slot && s->slot[find(s->slot, name)];
}

int kd_topicset_add(kd_topicset_t *s, const char *name)
{
        if (s->cnt >= KD_TOPICSET_MAX)
                kd_topicset_clear(s);
        if (!s->slot &&
            !(s->slot = calloc(KD_TOPICSET_SLOTS, sizeof(*s->slot))))
                return -1;
        size_t i = find(s->slot, name);
        if (s->slot[i])
                return 0;
        if (!(s->slot[i] = strdup(name)))
                return -1;
        s->cnt++;
        return 0;
}

void kd_topicset_clear(kd_topicset_t *s)
{
        for (size_t i = 0; s->slot && i < KD_TOPICSET_SLOTS; i++)
                free(s->slot[i]);
        free(s->slot);
        s->slot = NULL;
        s->cnt = 0;
}
