-- replaced by the store schema
SELECT 1;
