/* SPDX-License-Identifier: Apache-2.0 */
/* Replays every input in fuzz/corpus/NAME/ (the seeds) and fuzz/regress/NAME/
 * (inputs that once crashed fuzz_NAME, kept as regression tests) through
 * the fuzz target's entry point, built here without libFuzzer; NAME is
 * KD_FUZZ_NAME (one program per target, fuzz/targets.cmake). An input that
 * crashes or breaks one of the target's invariants aborts this program. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_test.h"

#ifndef KD_FUZZ_NAME
#error "KD_FUZZ_NAME names the fuzz target (see fuzz/targets.cmake)"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads path into a new buffer of exactly its size (so reads past the end
 * show under ASan). NULL on error. */
static uint8_t *slurp(const char *path, size_t *sizep)
{
        FILE *fp = fopen(path, "rb");
        if (!fp)
                return NULL;
        uint8_t *buf = NULL;
        size_t n = 0;
        if (fseek(fp, 0, SEEK_END) == 0) {
                long len = ftell(fp);
                if (len >= 0 && fseek(fp, 0, SEEK_SET) == 0) {
                        n = (size_t)len;
                        buf = malloc(n ? n : 1);
                        if (buf && fread(buf, 1, n, fp) != n) {
                                free(buf);
                                buf = NULL;
                        }
                }
        }
        fclose(fp);
        *sizep = n;
        return buf;
}

/* Runs every regular file of fuzz/<dir>/KD_FUZZ_NAME; returns how many. */
static int replay_dir(const char *dir)
{
        char path[4096];
        snprintf(path, sizeof(path), "%s/fuzz/%s/%s", KDELAY_SOURCE_DIR, dir,
                 KD_FUZZ_NAME);
        DIR *d = opendir(path);
        CU_ASSERT_PTR_NOT_NULL_FATAL(d);
        int n = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
                if (e->d_name[0] == '.')
                        continue; /* ".", "..", ".gitkeep" */
                snprintf(path, sizeof(path), "%s/fuzz/%s/%s/%s",
                         KDELAY_SOURCE_DIR, dir, KD_FUZZ_NAME, e->d_name);
                size_t size;
                uint8_t *data = slurp(path, &size);
                CU_ASSERT_PTR_NOT_NULL(data);
                if (!data)
                        continue;
                /* Named first, so a crash says which input it was. */
                fprintf(stderr, "replay %s/%s/%s (%zu bytes)\n", dir,
                        KD_FUZZ_NAME, e->d_name, size);
                CU_ASSERT_EQUAL(LLVMFuzzerTestOneInput(data, size), 0);
                free(data);
                n++;
        }
        closedir(d);
        return n;
}

static void test_corpus(void)
{
        int n = replay_dir("corpus");
        printf("\n  replayed %d seed inputs", n);
        /* Seeds for every parser the target drives (at least one). */
        CU_ASSERT(n >= 1);
}

static void test_regress(void)
{
        int n = replay_dir("regress");
        /* A target may have none yet (the directory holds .gitkeep). */
        printf("\n  replayed %d regression inputs", n);
}

int main(void)
{
        static const kd_test_case_t cases[] = {
            KD_TEST(test_corpus), KD_TEST(test_regress), KD_TEST_END};
        return kd_test_run("fuzz_regress_" KD_FUZZ_NAME, cases, NULL, NULL);
}
