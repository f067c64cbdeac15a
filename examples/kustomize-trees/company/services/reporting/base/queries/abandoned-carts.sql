SELECT customer_id, count(*) FROM carts
WHERE updated_at < now() - interval '24 hours' AND checked_out = false
GROUP BY customer_id;
