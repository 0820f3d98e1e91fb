/* SPDX-License-Identifier: Apache-2.0 */
/* Intrusive doubly linked lists: a node carries its prev and next
 * pointers, a list is a pointer to its first node. Macros, since the
 * node types differ (a partition's tasks, the modes' partitions). */
#ifndef KD_DLIST_H
#define KD_DLIST_H

/* Node n goes first in the list at head. */
#define KD_DLIST_PUSH(head, n)                                                 \
        do {                                                                   \
                (n)->prev = NULL;                                              \
                (n)->next = (head);                                            \
                if (head)                                                      \
                        (head)->prev = (n);                                    \
                (head) = (n);                                                  \
        } while (0)

/* Node n leaves the list at head (its pointers NULL after). */
#define KD_DLIST_UNLINK(head, n)                                               \
        do {                                                                   \
                if ((n)->prev)                                                 \
                        (n)->prev->next = (n)->next;                           \
                else                                                           \
                        (head) = (n)->next;                                    \
                if ((n)->next)                                                 \
                        (n)->next->prev = (n)->prev;                           \
                (n)->prev = (n)->next = NULL;                                  \
        } while (0)

#endif
