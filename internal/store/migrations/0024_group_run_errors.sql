-- 0024: the errors of the allocs a group's last `group run` could not give their volumes
-- (store.Group.RunErrors), as a JSON object by alloc name, {"web[0]": "claim ..."}, NULL when
-- every alloc got its volumes. They were kept in the spec column's JSON ("run_errors"), beside
-- the spec they are not part of, where the scrub of the secrets that leave the state
-- (forgetGone) did not reach them. The migration's step (moveGroupRunErrors) moves what an
-- older volctl wrote there into this column, the spec column rewritten as Put writes it. A
-- volctl before this version refuses the database by its version.
ALTER TABLE groups ADD COLUMN run_errors TEXT;
