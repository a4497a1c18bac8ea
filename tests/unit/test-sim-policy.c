#include <stdlib.h>
int main(void) { return 0; }
