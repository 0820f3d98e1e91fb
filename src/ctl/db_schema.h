/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl db migrate and db version: the database's schema brought up
 * to date (opt-in steps only when asked), or its version shown; each
 * with the opt-in step the database then waits for, if any. */
#ifndef DB_SCHEMA_H
#define DB_SCHEMA_H

#include "cli.h"

/* Connects to mysql.url, then migrates (migrate; enable: an opt-in step
 * to take too, after the forwarder group's check unless force) or reads
 * the version (!migrate), and prints the outcome: lines, or one JSON
 * object (json). The exit code. */
int kd_db_schema(kd_cli_t *cli, int migrate, const char *enable, int force,
                 int json);

#endif
