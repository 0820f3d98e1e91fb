/* SPDX-License-Identifier: Apache-2.0 */
/* The Kafka client.id a forwarder's consumer gives the group, saying
 * which instance it is and which release it runs:
 *
 *   kdelay-forwarder/<X.Y.Z>/<forwarder.instance>
 *
 * so that `kdelayctl db migrate --enable lean-fate` can tell whether a
 * member older than a release still reads the fate table
 * (docs/upgrading.md), and the forwarder whether another member has its
 * instance (tiercheck.c). Releases before 0.4.0 gave the instance alone:
 * a client.id without the prefix names its instance and no release. */
#ifndef KD_FWDID_H
#define KD_FWDID_H

#include <stddef.h>

#define KD_FWDID_PREFIX "kdelay-forwarder/"

/* "kdelay-forwarder/<KDELAY_VERSION_STR>/<instance>" into out (size
 * bytes): 0, or -1 when it does not fit. */
int kd_fwdid_make(const char *instance, char *out, size_t size);

/* What client_id says: *instancep the instance (borrowed from client_id:
 * the whole of it when it has no release), release into v; 1 with a
 * release, 0 without (a forwarder before 0.4.0, or a client.id set by
 * hand). */
int kd_fwdid_parse(const char *client_id, const char **instancep, int v[3]);

#endif
