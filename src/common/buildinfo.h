/* SPDX-License-Identifier: Apache-2.0 */
/* What a binary says it is: the version (0.3.0, or 0.3.0-dev+<commit> for
 * a tree that is not a release; cmake/version.sh), the commit it was built
 * from, the schema version its migrations reach and the librdkafka it
 * runs with. `--version` of kdelay-forwarder and kdelayctl prints them,
 * the forwarder's kdelay_build_info carries them. */
#ifndef KD_BUILDINFO_H
#define KD_BUILDINFO_H

#include <stdio.h>

/* "0.3.0" or "0.3.0-dev+6bd55b0e23ba" (unknown for the commit of a build
 * without .git or KDELAY_REVISION). */
const char *kd_build_version(void);

/* The commit: a full hash from git, KDELAY_REVISION as given, or
 * "unknown". */
const char *kd_build_revision(void);

/* The newest schema version of the migrations this build carries. */
int kd_build_schema(void);

/* The --version line, one line for a grep or an awk:
 * "PROG VERSION commit=REVISION schema=N librdkafka=V\n". */
void kd_build_print(FILE *out, const char *prog);

#endif
