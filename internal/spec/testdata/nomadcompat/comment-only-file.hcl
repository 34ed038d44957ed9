# only
// comments
/* here */
