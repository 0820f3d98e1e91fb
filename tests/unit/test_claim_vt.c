/* SPDX-License-Identifier: Apache-2.0 */
#include "kd_test.h"
int main(void)
{
        static const kd_test_case_t cases[] = {KD_TEST_END};
        return kd_test_run("claim_vt", cases, NULL, NULL);
}
