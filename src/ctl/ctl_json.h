/* kdelayctl's --json output on stdout, one object a line: a verb with one
 * answer prints one JSON document (one line); a verb that streams (tasks
 * list, dead list, cancel -, dead replay) prints JSON lines, one object
 * per item. Each verb's --help says which. */
#ifndef KD_CTL_JSON_H
#define KD_CTL_JSON_H

#include <cjson/cJSON.h>

/* Prints o unformatted on one line of stdout and deletes it (o may be
 * NULL: out of memory, nothing printed). 0, or -1 when nothing could be
 * printed. */
int kd_ctl_json_print(cJSON *o);

#endif
