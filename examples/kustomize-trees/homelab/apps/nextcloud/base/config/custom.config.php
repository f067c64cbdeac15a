<?php
$CONFIG = array (
  'default_phone_region' => 'DE',
  'maintenance_window_start' => 1,
  'memcache.local' => '\OC\Memcache\APCu',
  'trusted_proxies' => array('10.42.0.0/16'),
);
