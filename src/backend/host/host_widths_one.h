/* One width of host_widths.h: the template at the parameters set there, then
 * the parameters undefined for the next width. No include guard. */
#include SQ_HOT_TEMPLATE
#undef HOT_VF
#undef HOT_VI
#undef HOT_W
#undef HOT_ATTR
#undef HOT_NAME
#undef HOT_FN
