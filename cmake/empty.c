/* cmake/empty.c - stands in for a folder that has no sources yet. */
typedef int herd_empty_translation_unit_t;
